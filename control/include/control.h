/* SPDX-License-Identifier: MIT */
/*
 * plugfs control socket: a Unix stream socket speaking one JSON object per
 * line each way (docs/protocol.md).  The server runs in the daemon on its own
 * thread; the client half is used by the CLI.  JSON shapes shared with the
 * offline `state dump --json` live here too.
 */
#ifndef PLUGFS_CONTROL_H
#define PLUGFS_CONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "registry.h"

#define CONTROL_LINE_MAX (64 * 1024)

struct control_server;

/* Room for the message of a refused reload (control_options.reload). */
#define CTL_RELOAD_ERR_MAX 1024
struct metrics;		 /* common/metrics.h */
struct plugfs_own_mount; /* common/fsutil.h */

/* How long `register' waits for its socket's path to be resolved (a
 * filesystem on the way that does not answer: refused). */
#define CTL_SOCKET_RESOLVE_MS 1000

struct control_options {
	const char *socket_path;
	const char *group; /* "" or NULL: mutations by uid 0 only */
	unsigned max_clients;
	unsigned idle_timeout; /* seconds, 0 = none */
	/* For `status`, and `register' refuses a socket under it. */
	const char *mountpoint;
	/* NULL, or the daemon's own mount (common's fsutil.h; the server
	 * takes a reference): `register' refuses a socket whose path leads
	 * there through a symlink or a bind mount, resolved on a helper
	 * thread bounded by CTL_SOCKET_RESOLVE_MS, never looked up there. */
	struct plugfs_own_mount *own_mount;
	const char *state_path;
	/* When inherit_listen_fd: serve listen_fd, a listening socket at
	 * socket_path inherited across a re-exec of the daemon, instead of
	 * creating one (the server owns it from then on). */
	bool inherit_listen_fd;
	int listen_fd;
	/* NULL, or the first probe of a registration (of its first type):
	 * `register' calls it before storing it, on a probe thread of the
	 * server (several at once, never the thread that serves the clients)
	 * with no lock held, and a new registration starts with *out, so a
	 * dead socket never takes over.  The answer then says the
	 * registration's health.  It must be bounded (the daemon's is
	 * probe_first) and return soon (the daemon's within 50 ms) once
	 * *cancel, read atomically, is true: the server gave up on it (a
	 * handover's drain, a stop) and stores nothing of it. */
	void (*probe)(const char *type, const struct reg_spec *spec, const bool *cancel,
		      struct reg_runtime *out, void *arg);
	void *probe_arg;
	/* NULL (`reload' answers unavailable), or reloads the daemon's config
	 * for `reload', on the server thread: 0 when the new config is in
	 * force, with *info NULL or an object (owned by the caller then) whose
	 * members go into the answer; -errno when it was refused and the
	 * running config is kept, with err naming the file, line and key. */
	int (*reload)(void *arg, json_t **info, char *err, size_t errlen);
	void *reload_arg;
	/* NULL, or what `metrics' adds for the rest of the daemon (the
	 * filesystem, the probes): called on the server thread, it appends
	 * families to m (common/metrics.h) and must not block. */
	void (*metrics)(struct metrics *m, void *arg);
	void *metrics_arg;
};

/* Creates the socket (0660, group set, never wider), starts the server
 * thread.  Refuses to replace a path that is not a socket or on which a live
 * daemon answers. */
int control_server_start(struct registry *reg, const struct control_options *opts,
			 struct control_server **out, char *err, size_t errlen);
/* Stops the thread, closes clients, removes the socket file. */
void control_server_stop(struct control_server *srv);
/* Stops the thread for a handover: first it stops accepting and answers
 * every request it had read (a request a client sends after that fails at
 * the client with EPIPE: never taken, so it may be sent again), at most
 * CTL_DRAIN_MAX_MS (3 s) for clients that do not take their answers; waits
 * and watches are closed without an answer.  Then it closes the clients
 * but keeps the socket file and returns the listening socket (owned by the
 * caller, close-on-exec set), so that clients connecting meanwhile wait in
 * its backlog for the next server.  -1 when there is none. */
int control_server_stop_keep_listener(struct control_server *srv);
/* The listening socket of a running server (owned by it), e.g. to hand a
 * copy to systemd's file descriptor store. */
int control_server_listen_fd(const struct control_server *srv);

/* --- client --- */

/* Connects to path.  -errno when nothing answers (message names the path). */
int control_connect(const char *path, int *fd_out, char *err, size_t errlen);
/* Sends one request object (a line), 0 or -errno. */
int control_send(int fd, json_t *req, char *err, size_t errlen);
/* Reads one response/event line; timeout_ms < 0 waits forever.
 * -ETIMEDOUT on timeout, -EPIPE when the server closed in the middle of a
 * line, -ECONNABORTED when it closed before sending a byte of one (also
 * with what we sent unread: ECONNRESET). */
int control_recv(int fd, json_t **resp, int timeout_ms, char *err, size_t errlen);
/* Sends req and reads one answer.  When the daemon closed the connection
 * before taking the request (it refuses a client beyond max_clients that way),
 * the line it sent before closing is read and returned instead of the broken
 * pipe, so the caller can show the daemon's reason; without one,
 * -ECONNABORTED: the request was not taken (a handover fenced it off) and
 * may be sent again, as after control_recv's -ECONNABORTED. */
int control_exchange(int fd, json_t *req, json_t **resp, int timeout_ms, char *err, size_t errlen);
/* One round trip: connect, send req, read one answer, close.  0 with *resp
 * (owned by the caller; it may be an error answer), or -errno from the steps
 * above with a message. */
int control_call(const char *path, json_t *req, json_t **resp, int timeout_ms, char *err,
		 size_t errlen);
/*
 * Reads the lines that follow an answer on fd (the lines of a streamed
 * `list', events) through a buffer of its own: far fewer system calls than
 * control_recv, which takes one line and leaves the rest in the socket.
 * Use one or the other on a connection from a given point on.
 */
struct control_reader {
	int fd;
	char *buf;
	size_t off, len, cap;
};
/* A reader of fd (not owned): no allocation yet. */
void control_reader_init(struct control_reader *rd, int fd);
/* The next line as a JSON object: 0 with *obj (owned by the caller), or
 * -errno with a message as control_recv (-EPIPE: closed mid-stream,
 * -ETIMEDOUT after timeout_ms without a whole line; < 0 waits). */
int control_reader_next(struct control_reader *rd, json_t **obj, int timeout_ms, char *err,
			size_t errlen);
void control_reader_free(struct control_reader *rd);

/* NULL when resp is {"ok":true,...}; else the error message, and *code (may
 * be NULL) the error code.  The strings belong to resp. */
const char *control_response_error(json_t *resp, const char **code);

/* --- JSON shapes (same for list --json, show --json, state dump --json) --- */

/* {"alloc","socket","version","kind","options",{...},"seq","registered_at","updated_at"} */
json_t *control_json_registration(const struct registration *r);
/* {"type","name","active","registrations":[...]} */
json_t *control_json_plugin(const struct reg_plugin *p);
/* {"plugins":[...]} */
json_t *control_json_snapshot(const struct reg_snapshot *s);
/* The daemon's answers add what only it knows, the health (not in the
 * offline dump): {"state":"unknown"|"alive"|"dead","since","last_probe"
 * (RFC 3339 or null),"error" (null or text),"failures"}. */
json_t *control_json_health(const struct reg_runtime *rt);
/* Sets "health" on each registration of plugin (the JSON of p) and
 * "alive" (how many are not dead) on plugin; 0 or -ENOMEM. */
int control_json_add_health(json_t *plugin, const struct reg_plugin *p);
/* control_json_add_health on every plugin of snap (the JSON of s). */
int control_json_snapshot_add_health(json_t *snap, const struct reg_snapshot *s);

/*
 * Writes {"plugins":[...]} to f exactly as json_dumpf(JSON_INDENT(2)) would
 * write control_json_snapshot's object, one plugin at a time (list --json,
 * state dump --json without the whole document in memory).  begin, then add
 * per plugin (borrowed), then end, which prints the last newline too.  0,
 * or -errno of the write or -ENOMEM.
 */
struct control_json_writer {
	FILE *f;
	size_t n;
};
void control_json_plugins_begin(struct control_json_writer *w, FILE *f);
int control_json_plugins_add(struct control_json_writer *w, json_t *plugin);
int control_json_plugins_end(struct control_json_writer *w);

/* --- a cursor over the plugins (list, state dump) --- */

/*
 * The plugins of reg (of one type when type is not NULL) one at a time, in
 * (type, name) order, without copying the registry: first the names of the
 * plugins that have registrations are taken (about 20 bytes a plugin; a
 * slice at a time, see control_cursor_prepare) and sorted, then each step
 * copies one plugin as it is at that moment.  A plugin that has
 * registrations all along comes exactly once; one deregistered before its
 * turn is passed over; one registered after the names were taken (before
 * the first plugin comes out) is not in the walk, and one registered while
 * they are being taken may or may not be.  Each plugin is consistent (one
 * state it had); the walk is not one instant of the whole registry.  Open:
 * 0 or -ENOMEM (nothing is taken yet).
 */
struct control_cursor;
int control_cursor_open(struct registry *reg, const char *type, struct control_cursor **out);
/* Up to steps more steps of taking the names (a slice of 4,096 plugins of
 * the index under the registry mutex per step), then of sorting them (a
 * run of 1,024 per step), then setting up their merge.  1 once the cursor
 * is ready (next then costs a lookup and a copy), 0 while steps remain,
 * or -ENOMEM.  A caller that must not hold its thread long (the control
 * server) makes a few steps per turn; next makes whatever is left. */
int control_cursor_prepare(struct control_cursor *cur, size_t steps);
/* The next plugin into *out (a copy: reg_plugin_free_contents): 1, 0 at
 * the end, or -ENOMEM. */
int control_cursor_next(struct control_cursor *cur, struct reg_plugin *out);
/* Plugins named at the open, and how many of them were passed over
 * (deregistered before their turn). */
size_t control_cursor_total(const struct control_cursor *cur);
size_t control_cursor_skipped(const struct control_cursor *cur);
void control_cursor_free(struct control_cursor *cur);

#endif
