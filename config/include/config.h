/* SPDX-License-Identifier: MIT */
/*
 * plugfs configuration: the INI file of plugfs.ini(5) (docs/plugfs.ini.5),
 * read with inih, on top of built-in defaults.  config_load and config_parse_string
 * share one code path.  Errors name file:line, the key and what is accepted;
 * unknown sections and keys are errors.
 */
#ifndef PLUGFS_CONFIG_H
#define PLUGFS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "reg_model.h"

#define CONFIG_DEFAULT_PATH "/etc/plugfs/plugfs.ini"
#define CONFIG_ERR_MAX 512

/* [discover.NAME] layout: where a plugin's socket sits under the root. */
enum plugfs_discover_layout {
	PLUGFS_DISCOVER_ALLOC = 0, /* ROOT/<alloc id>/SOCKET (Nomad) */
	PLUGFS_DISCOVER_PLUGIN,	   /* ROOT/<plugin name>/SOCKET, the directory's name the alloc */
};

/* Keys of a [discover.NAME] section, the index into key_line. */
enum plugfs_discover_key {
	PLUGFS_DK_ROOT = 0,
	PLUGFS_DK_LAYOUT,
	PLUGFS_DK_SOCKET,
	PLUGFS_DK_TYPE,
	PLUGFS_DK_NAME,
	PLUGFS_DK_FORGET_AFTER,
	PLUGFS_DK_N,
};

/* At most this many [discover.NAME] sections (each holds a watch per
 * allocation directory under its root). */
#define PLUGFS_DISCOVER_MAX 64

/* A [discover.NAME] section: one directory plugfs watches for plugin
 * sockets.  After a successful parse root is set and every other field has
 * its value or its default. */
struct plugfs_discover {
	char *name;			    /* NAME: its registrations' source is discover.NAME */
	char *root;			    /* required: absolute, normalised, not `/' */
	enum plugfs_discover_layout layout; /* alloc */
	char *socket;			    /* csi.sock: the socket's file name */
	char *type;			    /* NULL = auto (ask the plugin), else a [registry] type */
	char *plugin;			    /* NULL = auto (GetPluginInfo's name), else a name */
	int64_t forget_after;		    /* 3600 (seconds dead before deregistered; 0 = never) */
	unsigned line;			    /* where the section first appeared */
	unsigned key_line[PLUGFS_DK_N];	    /* where each key was set; 0 = not */
};

struct plugfs_config {
	/* [mount] */
	char *mountpoint;	/* /run/plugfs */
	char *socket_name;	/* csi.sock */
	bool allow_other;	/* true */
	unsigned cache_timeout; /* 60 (seconds) */
	/* [state] */
	char *state_path;  /* /var/lib/plugfs/state.db */
	char *synchronous; /* full: off | normal | full | extra */
	/* [control] */
	char *control_socket;  /* /run/plugfs.sock */
	char *control_group;   /* "" = root only */
	unsigned max_clients;  /* 64 */
	unsigned idle_timeout; /* 300 (seconds; 0 = none) */
	/* [registry] */
	char **types; /* csi-controller csi-node */
	size_t n_types;
	char **socket_roots; /* empty = any */
	size_t n_socket_roots;
	int64_t tombstone_ttl; /* 86400 (seconds) */
	/* [probe] in probe.dflt: mode connect, interval 5000 ms (written in
	 * seconds, e.g. 0.2), timeout 1000 ms, failures 3 (an alive
	 * registration turns dead after); its [probe.TYPE] sections in
	 * probe.types, in the order they first appear, each with only the keys
	 * it sets (the others 0: reg_probe_settings_of takes [probe]'s).  The
	 * array and its strings are the config's. */
	struct reg_probe_policy probe;
	/* [discover.NAME] sections, in the order they first appear */
	struct plugfs_discover *discover;
	size_t n_discover;
	/* [log] */
	enum plugfs_log_level log_level; /* info */

	char *source; /* file the values came from, "" for defaults */
};

/* Fills cfg with the built-in defaults.  0 or -ENOMEM. */
int config_defaults(struct plugfs_config *cfg);

/* Defaults, then the file at path.  A missing file is an error. */
int config_load(const char *path, struct plugfs_config *cfg, char *err, size_t errlen);

/* Defaults, then text; `name` is used in messages ("name:line: ..."). */
int config_parse_string(const char *text, const char *name, struct plugfs_config *cfg, char *err,
			size_t errlen);

/*
 * The config a subcommand uses: -c path when given (must exist), else
 * $PLUGFS_CONFIG when set (must exist), else CONFIG_DEFAULT_PATH when it
 * exists, else the built-in defaults.
 */
int config_resolve(const char *cli_path, struct plugfs_config *cfg, char *err, size_t errlen);

void config_free(struct plugfs_config *cfg);

struct registry_options;
/* The registry options of cfg (registry.h).  They borrow cfg's strings:
 * cfg must outlive registry_open (the registry copies what it keeps). */
void config_registry_options(const struct plugfs_config *cfg, struct registry_options *opts);

/* The [discover.NAME] section of cfg named name, or NULL. */
const struct plugfs_discover *config_discover_find(const struct plugfs_config *cfg,
						   const char *name);

/* Whether two [discover.NAME] sections watch the same way (every key but
 * where it was written). */
bool config_discover_equal(const struct plugfs_discover *a, const struct plugfs_discover *b);

/* "alloc", "plugin". */
const char *discover_layout_name(enum plugfs_discover_layout l);

const char *log_level_name(enum plugfs_log_level l);

#endif
