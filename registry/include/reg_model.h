/* SPDX-License-Identifier: MIT */
/*
 * The registry's values (registry.h is its API): a registration, a plugin
 * and its list, their runtime state (health), a snapshot for the probes,
 * and what a caller gives to register (struct reg_spec), with the limits
 * of their fields.  Owned by whoever the function that fills one says.
 */
#ifndef PLUGFS_REG_MODEL_H
#define PLUGFS_REG_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REG_NAME_MAX 128   /* name, alloc, option keys, types */
#define REG_VALUE_MAX 1024 /* option values and version */
#define REG_ERR_MAX 512	   /* a good size for err buffers */

enum reg_kind {
	REG_KIND_UNSET = 0, /* input only: derived from the type (see registry_register) */
	REG_KIND_CONTROLLER,
	REG_KIND_NODE,
	REG_KIND_MONOLITH,
};

/* "controller", "node", "monolith"; NULL for REG_KIND_UNSET. */
const char *reg_kind_name(enum reg_kind k);
/* Parses a kind name; returns 0 or -EINVAL. */
int reg_kind_parse(const char *s, enum reg_kind *out);

/*
 * How a registration is probed: plugfs's one probe mode, of [probe] mode,
 * [probe.TYPE] mode and a registration's own `probe' alike.  Spelled by
 * reg_probe_name and reg_probe_parse alone (none, connect, csi).
 */
enum reg_probe {
	REG_PROBE_DEFAULT = 0, /* not set at this level: the one below decides */
	REG_PROBE_NONE,	       /* not probed: counts as alive */
	REG_PROBE_CONNECT,     /* the socket accepts a connection */
	REG_PROBE_CSI,	       /* csi.v1.Identity/Probe over the socket answers ready */
};
#define REG_PROBE_COUNT (REG_PROBE_CSI + 1)
/* "none", "connect", "csi"; NULL for REG_PROBE_DEFAULT. */
const char *reg_probe_name(enum reg_probe p);
/* Parses "none", "connect" or "csi"; returns 0 or -EINVAL. */
int reg_probe_parse(const char *s, enum reg_probe *out);

/* How the registrations of one type are probed.  In a [probe.TYPE]
 * section, 0 (REG_PROBE_DEFAULT for mode) is a key it does not set. */
struct reg_probe_settings {
	enum reg_probe mode;
	unsigned interval_ms; /* between rounds */
	unsigned timeout_ms;  /* per probe */
	unsigned failures;    /* consecutive failures before alive turns dead, >= 1 */
};

/* One type's settings, [probe.TYPE]. */
struct reg_probe_type {
	const char *type;
	struct reg_probe_settings s;
};

/* The probe settings of a config: [probe] and the types with settings of
 * their own. */
struct reg_probe_policy {
	struct reg_probe_settings dflt; /* [probe] */
	const struct reg_probe_type *types;
	size_t n_types;
};

/*
 * The one resolver of a registration's effective probe settings: its own
 * mode (own; REG_PROBE_DEFAULT: none of its own) over its type's settings
 * (its entry in p->types, key by key; type NULL: none) over p->dflt.
 * out->mode is never REG_PROBE_DEFAULT: none when no level sets one.  Used
 * by the config ([probe.TYPE] over [probe]) and by the prober, at any
 * thread (p is only read).
 */
void reg_probe_settings_of(const struct reg_probe_policy *p, const char *type, enum reg_probe own,
			   struct reg_probe_settings *out);
#define REG_CSI_NAME_MAX 63 /* the CSI spec's limit of GetPluginInfo's name */

struct reg_option {
	char *key;
	char *value;
};

/* The health of a registration, as the prober last judged it. */
enum reg_health {
	REG_HEALTH_UNKNOWN = 0, /* not probed yet (counts as alive) */
	REG_HEALTH_ALIVE,
	REG_HEALTH_DEAD,
};
/* "unknown", "alive", "dead"; "?" for anything else. */
const char *reg_health_name(enum reg_health h);

/* The longest probe failure text kept (longer ones are cut). */
#define REG_HEALTH_ERR_MAX 160

/*
 * The one stored copy of a probe failure's text: NULL for NULL or "", else
 * a string that lives as long as the process, the same pointer for the same
 * text.  At most REG_ERROR_TEXTS_MAX distinct texts are kept; past that a
 * new one is given as a fixed text that says so.  Thread-safe.
 */
#define REG_ERROR_TEXTS_MAX 4096
#define REG_ERROR_TEXTS_MAX_STR "4096"
const char *reg_error_intern(const char *text);

/* State of a registration that lives in memory only (never persisted;
 * zero, i.e. unknown, when the registry opens), changed through
 * registry_set_runtime.  The registry reads health only to elect the
 * active registration; the prober (probe/) sets it.  A plain value: the
 * error text is shared, never owned. */
struct reg_runtime {
	enum reg_health health;
	unsigned failures;  /* consecutive failed probes */
	int64_t since;	    /* when health last changed: unix seconds, UTC; 0 never */
	int64_t probed_at;  /* the last probe: unix seconds, UTC; 0 never */
	const char *error;  /* the last failure ("connection refused"), NULL after
			       a success: a text of reg_error_intern's (the
			       registry stores no other) */
};
/* rt's error text, "" when there is none. */
static inline const char *reg_runtime_error(const struct reg_runtime *rt)
{
	return rt->error ? rt->error : "";
}

/* 144 bytes on LP64 (a 160-byte malloc chunk in a plugin's list of one):
 * the fields are in an order without holes; keep it so. */
struct registration {
	int64_t id; /* persisted row id, never reused in a state file */
	char *type;
	char *name;
	char *alloc;
	char *socket;
	char *version; /* "" when not given */
	enum reg_kind kind;
	enum reg_probe probe;	    /* its own probe mode, or its type's */
	struct reg_option *options; /* sorted by key */
	size_t n_options;
	char *csi_name;		    /* "" or, with probe csi, the name GetPluginInfo must give */
	char *source;		    /* "" = the control socket, else "discover.NAME" */
	int64_t seq;		    /* place in the list: higher is more recent */
	int64_t registered_at;	    /* unix seconds, UTC */
	int64_t updated_at;	    /* unix seconds, UTC */
	struct reg_runtime runtime; /* not persisted; kept by an update */
};

/* One (type, name) with at least one registration (one whose list emptied
 * is never given out: see registry_each_empty_plugin). */
struct reg_plugin {
	int64_t id; /* persisted plugin id, never reused in a state file */
	char *type;
	char *name;
	struct registration *regs; /* ordered by seq, highest (most recent) first */
	size_t n_regs;
	/* The index in regs of the active registration, chosen by the
	 * registry; n_regs or more when none is active.  Read it through
	 * reg_plugin_active, never as regs[0]: the active one is the most
	 * recent registration that is not dead (unknown counts as alive),
	 * and the most recent one when every one is dead.  A zeroed field
	 * with n_regs > 0 means regs[0]. */
	size_t active;
};

/* The active registration of p (the one its `active' link points at), or
 * NULL when none is (p NULL or without registrations).  Borrowed from p. */
const struct registration *reg_plugin_active(const struct reg_plugin *p);

/* A deep copy of the whole registry (or one type of it); owned by the caller. */
struct reg_snapshot {
	struct reg_plugin *plugins; /* sorted by (type, name) */
	size_t n_plugins;
};

/*
 * The lifetime of these values (registry/model.c).  A value owns every
 * string and array it points to; a zeroed value is empty and may be freed.
 * The free functions free the contents (not the struct itself), leave it
 * zeroed and accept NULL.
 */
void reg_snapshot_free(struct reg_snapshot *s);
void reg_plugin_free_contents(struct reg_plugin *p);
void registration_free_contents(struct registration *r);
/* Frees n options and the array. */
void reg_options_free(struct reg_option *o, size_t n);
/* Deep copies (a NULL string becomes ""): 0, or -ENOMEM with *dst empty.
 * The caller owns *dst and frees it with the matching free function. */
int reg_options_copy(const struct reg_option *src, size_t n, struct reg_option **dst,
		     size_t *n_dst);
int registration_copy(const struct registration *src, struct registration *dst);
int reg_plugin_copy(const struct reg_plugin *src, struct reg_plugin *dst);
/* The one allocation that holds an owned value's strings (model.c): copies
 * the n (at most 8) strings in[i] (NULL as "") into one block, a
 * reference-counted text (rcstr.h), points *out[i] at each copy and returns
 * the block (that is, *out[0]); NULL on ENOMEM, with nothing set.
 *
 * Sharing: an owned registration's strings are one such block that starts
 * at its socket (then alloc, type, name, version, csi_name), an owned
 * plugin's one that starts at its name (then type; the registry's own
 * plugins hold their name alone, their type is the configured type's
 * name, which lives as long as the registry).  The block is never
 * written after it is packed, and the value holds one reference to it.
 * Another part may keep the strings beyond the value's life by taking a
 * reference of its own (rcstr_ref(r->socket), rcstr_ref(p->name)) while the
 * value is alive (under the registry mutex for the registry's own values:
 * an event callback), and reads them afterwards without the registry's
 * lock; it drops the reference with rcstr_unref.  The filesystem view
 * keeps its names and link targets so (fs/sync.c). */
char *reg_strings_pack(const char *const *in, char **out[], size_t n);
/* The strings of an owned registration's block, in order ("Sharing"
 * above), and the i-th of the block that starts at first. */
enum reg_string {
	REG_STR_SOCKET,
	REG_STR_ALLOC,
	REG_STR_TYPE,
	REG_STR_NAME,
	REG_STR_VERSION,
	REG_STR_CSI_NAME,
	REG_STR_SOURCE,
};
const char *reg_strings_at(const char *first, enum reg_string i);
/* Whether registry_set_runtime sees a change from a to b worth an event:
 * health, since or error differ.  probed_at and failures alone are kept
 * without an event (a probe round that changed nothing wakes nobody). */
bool reg_runtime_differs(const struct reg_runtime *a, const struct reg_runtime *b);
/* Whether a and b register the same thing: socket, version, kind, options
 * (both sorted by key), probe, csi_name and source.  Ids, seq and times are
 * not compared. */
bool registration_same_data(const struct registration *a, const struct registration *b);

/* What a caller asks to register; strings are borrowed. */
struct reg_spec {
	const char *name;
	const char *alloc;
	const char *socket;
	const char *version; /* NULL or "" = none */
	enum reg_kind kind;  /* REG_KIND_UNSET: csi-controller -> controller,
				csi-node -> node, any other type -> monolith */
	const struct reg_option *options;
	size_t n_options;
	enum reg_probe probe; /* REG_PROBE_DEFAULT: the type's mode */
	/* NULL or "" = none; else only with probe REG_PROBE_CSI: 1-63 of
	 * [A-Za-z0-9.-], beginning and ending alphanumeric (the CSI spec's
	 * plugin name) */
	const char *csi_name;
	/* NULL or "" = registered over the control socket; "discover.NAME":
	 * found by the [discover.NAME] section NAME (a name). */
	const char *source;
	/* NULL, or the runtime state a registration that is new (inserted,
	 * not updated) starts with, e.g. the result of a probe made before
	 * registering, so that a dead socket never becomes active even for a
	 * moment.  An update keeps the entry's runtime state. */
	const struct reg_runtime *runtime;
};

#endif
