/* SPDX-License-Identifier: MIT */
/*
 * Private to control/: the daemon half of the control socket.  Its files,
 * each above the files it uses (no two call each other), from the bottom:
 *
 *   (control_internal.h, shared with the client half: json.c the JSON
 *   shapes, linebuf.c line framing, request.c a request's parse and the
 *   answers' shapes, cursor.c a cursor over the plugins, client.c the
 *   CLI's side)
 *   listen.c  the socket file and the peer's credentials
 *   reply.c   what a client is sent: its output buffer, the answers and
 *             refusals, a plugin's JSON as answers carry it
 *   accept.c  admitting clients: accept, make room, refuse
 *   events.c  the event queue the registry callback fills; watchers, waits
 *   stream.c  `list' as a stream
 *   commit.c  the group commit of the mutations of one poll round
 *   firstprobe.c  a register's first probe on the probe threads, and the
 *             mutations of a plugin kept in their order behind it
 *   drain.c   the drain before a handover: answer what was read, then stop
 *   metrics.c the `metrics' text
 *   ops.c     the operations (register, deregister, list, show, wait,
 *             watch, status, reload, metrics): their table and the
 *             dispatch of a request line
 *   conn.c    a connection: read, serve its lines, free it
 *   server.c  the server thread: the poll() loop, timers, start and stop
 *
 * Threads: everything here runs on the server thread, except
 * ctl_events_on_registry(), which runs on the thread that committed a
 * registry change, with the registry mutex held, and takes only q_lock
 * (lock order: registry mutex, then q_lock), and the probe threads of
 * firstprobe.c, which run a register's first probe (the daemon's callback)
 * and take only first_mu, alone.  Nothing is written to a socket from
 * either.
 */
#ifndef PLUGFS_CONTROL_SERVER_INTERNAL_H
#define PLUGFS_CONTROL_SERVER_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control_internal.h"

/* --- the socket file and peers (listen.c) --- */

/* Looks a group name up.  -ENOENT (message names the group) when unknown. */
int ctl_resolve_group(const char *group, gid_t *gid, char *err, size_t errlen);

/*
 * Creates a listening, non-blocking socket at path: mode 0660, group gid when
 * set_group, never wider at any moment.  An existing path is replaced only
 * when it is a socket nobody answers on.  *dev_out and *ino_out identify the file
 * for ctl_unlink_if_ours.
 */
int ctl_listen(const char *path, bool set_group, gid_t gid, int *fd_out, dev_t *dev_out,
	       ino_t *ino_out, char *err, size_t errlen);
/* Removes path only if it is still the socket ctl_listen created. */
void ctl_unlink_if_ours(const char *path, dev_t dev, ino_t ino);

struct ctl_peer {
	pid_t pid;
	uid_t uid;
	bool may_mutate; /* uid 0, or the control group among its groups */
};
/* Credentials of the peer at connect() time (SO_PEERCRED, SO_PEERGROUPS). */
int ctl_peer_creds(int fd, gid_t group, bool have_group, struct ctl_peer *peer);

/* --- the server and its clients --- */

/* At most one log line per CTL_LOG_INTERVAL_MS for one kind of event; the
 * next line says how many were left out. */
#define CTL_LOG_INTERVAL_MS 10000
struct ctl_ratelimit {
	int64_t last_ms; /* 0: never logged */
	unsigned suppressed;
};
/* True when a line may be logged now; *suppressed receives (and the
 * limiter forgets) the count of those left out since the last one. */
bool ctl_ratelimit_ok(struct ctl_ratelimit *rl, int64_t now_ms, unsigned *suppressed);

/* A client whose unsent output passes OUT_STALL is not read from until it
 * drains; one (a watcher that stopped reading) passing OUT_MAX is dropped. */
#define OUT_STALL (256 * 1024)
#define OUT_MAX (8 * 1024 * 1024)
/* A client idle this long (no whole request) may be closed to make room
 * for a new one when control.max_clients is reached. */
#define EVICT_IDLE_MS 1000
/* A list (stream.c) is produced a chunk at a time, a chunk of at most
 * STREAM_CHUNK_PLUGINS plugins or about STREAM_CHUNK_BYTES, and only while
 * less than STREAM_LOW of its answer is unsent: a listing client holds at
 * most about STREAM_LOW + STREAM_CHUNK_BYTES of the daemon's memory. */
#define STREAM_LOW (64 * 1024)
#define STREAM_CHUNK_BYTES (32 * 1024)
#define STREAM_CHUNK_PLUGINS 256
/* Steps of a list's cursor (a slice of 4,096 names taken, or a run of
 * 1,024 sorted) per round, before its first plugin. */
#define STREAM_PREPARE_STEPS 2

struct ctl_stream; /* stream.c */

/* One connection.  Owned by the server thread; created by ctl_conn_accept,
 * freed by ctl_conn_free.  The watch and wait fields belong to events.c. */
struct client {
	struct client *next;
	struct control_server *srv;
	int fd;
	unsigned long long serial;
	struct ctl_peer peer;
	struct ctl_linebuf in;
	char *out;
	size_t out_off, out_len, out_cap;
	/* A list being sent (stream.c), or NULL.  While it runs, later
	 * request lines wait, and other output (events of a watch) is held
	 * here so that it does not land inside the list; it follows the end. */
	struct ctl_stream *stream;
	char *held;
	size_t held_len, held_cap;
	bool eof;     /* the client shut down its sending side */
	bool fenced;  /* a handover shut our reading side (drain.c) */
	bool closing; /* close once the output is flushed */
	bool dead;    /* close now */
	bool watching;
	char **watch_types; /* NULL with watching: every type */
	size_t n_watch_types;
	bool waiting;
	bool committing;     /* a mutation of its waits for its probe or the group commit */
	struct ctl_job *job; /* that mutation while firstprobe.c holds it, or NULL */
	bool resume;	     /* a wait or a commit ended: serve the lines held back */
	char *wait_type, *wait_name;
	char *wait_alloc; /* NULL: any active registration ends the wait */
	json_t *wait_id;
	int64_t wait_deadline; /* monotonic ms, -1 = none */
	int64_t last_active;   /* monotonic ms: connected, a whole request
				* read, or answers sent; bytes without a
				* newline do not count */
};

/* What `metrics' reports of the control server: owned by the server
 * thread, but for the event counters, which the registry's event callback
 * bumps on whatever thread mutated (atomics). */
struct ctl_counters {
	uint64_t requests[CTL_OP_COUNT]; /* parsed, by op */
	uint64_t answers_ok;
	uint64_t answers_error[CTL_E_COUNT]; /* by code */
	uint64_t accepted, refused;	     /* connections */
	uint64_t events[8];		     /* by enum reg_event_type (atomic) */
	uint64_t active_switches;	     /* REG_EV_ACTIVE (atomic) */
	uint64_t commit_groups;		     /* group commits run (commit.c) */
	uint64_t commit_grouped;	     /* the mutations they carried */
};

/* One committed registry change, queued for the server thread. */
struct ev_item {
	struct ev_item *next;
	char *type, *name;
	json_t *event;	/* the line watchers get */
	json_t *plugin; /* the plugin after the change, when it has registrations */
};

/* The probe threads of a register's first probe (firstprobe.c). */
#define CTL_PROBE_THREADS 16
struct ctl_job; /* firstprobe.c */
struct ctl_first {
	pthread_mutex_t first_mu;	   /* guards the fields up to the blank line */
	pthread_cond_t cond;		   /* a job queued, or stop */
	struct ctl_job *todo, **todo_tail; /* to probe, in arrival order */
	struct ctl_job *done, **done_tail; /* probed, for the server thread */
	pthread_t threads[CTL_PROBE_THREADS];
	unsigned n_threads, idle;
	bool stop;

	/* Read by the probes atomically: true once the server gave up on the
	 * probes in flight (a handover's drain, a stop): they end within
	 * PROBE_STOP_CHECK_MS and their registers are not committed. */
	bool cancel;
	/* Owned by the server thread: every mutation held here, in arrival
	 * order (a register probing or probed, a mutation behind one of the
	 * same plugin), and the registers closed unanswered at a handover. */
	struct ctl_job *order, **order_tail;
	bool ready; /* a job may be released: look at the order next round */
	unsigned abandoned;
};

struct control_server {
	struct registry *reg;
	/* What control_server_start was given, its strings the server's own
	 * copies (group, mountpoint and state_path "" when they were NULL);
	 * listen_fd there is the inherited socket, if any, the server's is
	 * listen_fd below. */
	struct control_options opt;
	bool have_group;
	gid_t gid;
	int listen_fd, wake_fd;
	dev_t sock_dev;
	ino_t sock_ino;
	int sub_id;
	pthread_t thread;
	bool thread_started;

	/* Clients watching or waiting, and waits looking the plugin up (an
	 * upper bound: set by the server thread, atomic): with none, the
	 * registry callback builds and queues nothing. */
	int listeners;

	pthread_mutex_t q_lock; /* guards the fields up to the next blank line */
	struct ev_item *q_head, **q_tail;
	bool stop;
	bool drain; /* stop after answering what was read (drain.c) */
	bool lost_events;

	struct ctl_first first; /* a register's first probe (firstprobe.c) */

	/* Owned by the server thread. */
	struct ctl_pending *pending;	/* mutations of this poll round (commit.c) */
	struct reg_mutation *pending_m; /* their registry_mutate array */
	size_t n_pending, cap_pending;
	struct client *clients;
	size_t n_clients;
	struct ctl_counters counters;
	/* Out of file descriptors: an fd held in reserve (/dev/null, or a
	 * duplicate of wake_fd in the slot of the last client refused), closed
	 * to accept one client and tell it "too many clients", then taken
	 * again; when even that fails, the listening socket is not polled
	 * until accept_resume (monotonic ms), backing off up to 1 s. */
	int reserve_fd;
	/* An O_PATH descriptor of the socket file (-1: none): /proc/PID/fd
	 * names where the socket is, so that `plugfs reload --pid' reaches
	 * this daemon after [control] socket changed in its config. */
	int path_fd;
	int64_t accept_resume;
	int accept_backoff_ms;
	struct ctl_ratelimit refuse_log;
	unsigned long long next_serial;
	int64_t started_mono;
	int64_t started_wall;
	/* A handover's drain (drain.c), once the thread saw srv->drain. */
	bool draining;
	struct ctl_drain {
		int64_t started, deadline; /* monotonic ms */
		unsigned clients;	   /* connected at the fence */
		unsigned served;	   /* request lines answered meanwhile */
		unsigned partial;	   /* unfinished lines dropped */
		unsigned ended;		   /* waits and watches closed */
		unsigned cut;		   /* clients closed at the deadline */
		unsigned abandoned;	   /* registers probing, closed unanswered */
	} drain_st;
	/* Test-only (tests/unit/test_control_drain.c), NULL in the daemon:
	 * stop_asked(stop_asked_arg) is called by the stopping thread once it
	 * asked the server thread to stop or drain, before it joins it;
	 * drain_report gets drain_st when the drain ends (server thread).  Set
	 * before the stop, which orders them (q_lock) for the server thread. */
	void (*stop_asked)(void *arg);
	void *stop_asked_arg;
	struct ctl_drain *drain_report;
};

/* --- what a client is sent (reply.c) --- */

/* Bytes queued for c and not sent yet. */
static inline size_t ctl_out_pending(const struct client *c)
{
	return c->out_len - c->out_off;
}

/* Marks c to be closed now; why (may be NULL) is logged at debug level. */
void ctl_conn_kill(struct client *c, const char *why);
/* Sends as much queued output as the socket takes without blocking. */
void ctl_conn_flush(struct client *c);
/* Queues n bytes for c and tries to send them; drops a client whose
 * backlog would pass OUT_MAX.  While c's list streams, they are held back
 * until its end. */
void ctl_conn_write(struct client *c, const char *data, size_t n);
/* Queues n bytes of c's stream itself (stream.c): never held back; the
 * stream bounds what it queues. */
void ctl_conn_write_raw(struct client *c, const char *data, size_t n);
/* Queues what was held back during a stream (at its end). */
void ctl_conn_release_held(struct client *c);
/* Sends obj (may be NULL: out of memory) as one line and releases it. */
void ctl_conn_send(struct client *c, json_t *obj);
/* Sends {"ok":false,"error":{code, message}} with id (may be NULL). */
void ctl_conn_send_error(struct client *c, json_t *id, enum ctl_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sends {"ok":true, key: val} with id; val is stolen.  key NULL: {"ok":true}. */
void ctl_conn_send_ok(struct client *c, json_t *id, const char *key, json_t *val);
/*
 * Answers req with the error "<op>: <message>" and logs it: a mutation
 * refused for the client's own mistake (a bad field, nothing to remove) at
 * notice, a request the daemon could not carry out (the state file, memory)
 * at error, a read that found nothing at debug.  The permission check logs
 * its own refusals at warn (ctl_ops_handle_line).
 */
void ctl_refuse(struct client *c, struct ctl_request *req, enum ctl_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answers req with the registry's error rc (err, else strerror), logged as
 * ctl_refuse logs. */
void ctl_refuse_registry(struct client *c, struct ctl_request *req, int rc, const char *err);
/* The JSON of p, with its health when the daemon probes. */
json_t *ctl_plugin_json(struct control_server *srv, const struct reg_plugin *p);

/* --- admitting clients (accept.c) --- */

/* Accepts every pending connection.  At control.max_clients the client
 * idle longest (EVICT_IDLE_MS or more, not watching or waiting) is closed
 * to make room; max_clients / 8 slots are kept for root (a client of
 * another uid makes room only among clients other than root).  One that
 * finds no room, or arrives while the daemon is out of file descriptors
 * (through the reserve fd), gets one `unavailable' "too many clients" line
 * and is closed.  The refusals are logged at most once per
 * CTL_LOG_INTERVAL_MS. */
void ctl_conn_accept(struct control_server *srv);

/* --- events, watchers and waits (events.c) --- */

/* The registry callback (registry_subscribe, arg = srv): queues the change
 * as JSON and wakes the server thread.  Any thread, registry mutex held. */
void ctl_events_on_registry(const struct reg_event *ev, void *arg);
/* Hands the queued events to watchers and pending waits, in commit order.
 * When events were lost, every watcher is told and closed. */
void ctl_events_deliver(struct control_server *srv);
/* Frees the events still queued (at stop). */
void ctl_events_drop_queue(struct control_server *srv);
/* Makes c a watcher of the n types (n = 0: every type); replaces an earlier
 * watch.  0 or -ENOMEM. */
int ctl_watch_begin(struct client *c, const char *const *types, size_t n);
/* Makes c wait for type/name to have an active registration (alloc's, when
 * alloc is not NULL), answering with id (borrowed, a reference is taken)
 * after timeout seconds (< 0: never).  0 or -ENOMEM. */
int ctl_wait_begin(struct client *c, const char *type, const char *name, const char *alloc,
		   json_t *id, double timeout);
/* Whether plugin (its JSON) ends a wait for alloc: any active registration
 * when alloc is NULL, else alloc's when it is the active one and not dead
 * (the most recent of registrations that are all dead is active, but its
 * socket does not answer). */
bool ctl_wait_satisfied(const char *alloc, json_t *plugin);
/* Ends c's wait: answers with plugin (borrowed), or with not_found when
 * plugin is NULL (the timeout), and marks c to resume serving lines. */
void ctl_wait_done(struct client *c, json_t *plugin);
/* Sets srv->listeners to the clients watching or waiting now (the server
 * thread, between requests). */
void ctl_events_count_listeners(struct control_server *srv);
/* Frees c's watch and wait state. */
void ctl_events_release(struct client *c);

/* --- list as a stream (stream.c) --- */

/* Starts answering req (a list, its type checked) as a stream on c: the
 * header (or the start of the one-line answer) is queued now, the plugins
 * by ctl_stream_step.  0, or -ENOMEM with nothing sent. */
int ctl_stream_begin(struct control_server *srv, struct client *c, struct ctl_request *req);
/* Whether c has a stream that may produce now (its output drained below
 * STREAM_LOW). */
bool ctl_stream_ready(const struct client *c);
/* Queues the next chunk of c's stream (one chunk: the server loop serves
 * the other clients between two); at the end the end line, then c's held
 * output and its held-back requests. */
void ctl_stream_step(struct control_server *srv, struct client *c);
/* Frees c's stream (the client is closing). */
void ctl_stream_release(struct client *c);

/* --- group commit (commit.c) --- */

/* Queues the checked mutation req (register with its spec, whose strings
 * are req's; deregister with spec NULL) of c for the group commit: req is
 * moved (emptied), c's further lines are held back until its answer.  c
 * NULL: its client is gone (committed all the same, nobody answered).
 * 0 or -ENOMEM (req untouched). */
int ctl_commit_add(struct control_server *srv, struct client *c, struct ctl_request *req,
		   const struct reg_spec *spec);
/* Commits every queued mutation with one registry_mutate call and answers
 * each client with its own result, in the order they were queued. */
void ctl_commit_run(struct control_server *srv);
/* Frees what is still queued (at stop). */
void ctl_commit_drop(struct control_server *srv);

/* --- a register's first probe (firstprobe.c) --- */

/* Sets srv->first up (no thread yet: they start on demand). */
void ctl_first_init(struct control_server *srv);

/*
 * The checked mutation req of c (register with its spec, whose strings are
 * req's; deregister with spec NULL), in the order mutations arrive.  A
 * register, when the daemon probes (control_options.probe), is probed on
 * a probe thread (at most CTL_PROBE_THREADS at once, started on demand)
 * while the server serves the others; a mutation of a plugin that such a
 * register holds waits behind it; then each goes to the group commit
 * (ctl_commit_add) in its order of arrival.  req is moved (emptied) and
 * c's further lines are held back until its answer.  Once the server gave
 * up on its probes (a handover's drain) a register is not taken: c is
 * closed unanswered (its client sends it again to the next server).
 * 0, -ENOMEM or -EAGAIN (no probe thread could start): req untouched.
 */
int ctl_first_add(struct control_server *srv, struct client *c, struct ctl_request *req,
		  const struct reg_spec *spec);
/* Takes the probes that ended and hands every mutation no earlier one of
 * its plugin holds back to the group commit, in arrival order. */
void ctl_first_collect(struct control_server *srv);
/* Whether a mutation is held here (probing, or behind a probe). */
bool ctl_first_busy(const struct control_server *srv);
/* A handover's drain gives up on the probes in flight: those that ended
 * are collected, every mutation still held is dropped (not committed) and
 * its client closed unanswered (it sends it again to the next server);
 * the probes in flight are cancelled.  Returns how many clients were
 * closed. */
unsigned ctl_first_abandon(struct control_server *srv);
/* c is being freed: a mutation of its still held is committed all the
 * same, unanswered. */
void ctl_first_forget(struct client *c);
/* Cancels the probes, joins the probe threads and frees every job and
 * srv->first's lock (at the server's stop; nothing is committed). */
void ctl_first_stop(struct control_server *srv);

/* --- the drain before a handover (drain.c) --- */

/* How long a handover waits at most for the answers of the requests read
 * before it (a client that does not read its answer, a long list): below
 * the third of systemd's WatchdogSec= the housekeeping thread pings at. */
#define CTL_DRAIN_MAX_MS 3000
/* How long a drain lets the registers probing when it began end their
 * probes (answered by this server) before it closes them unanswered (sent
 * again to the next one, which probes them again). */
#define CTL_DRAIN_PROBE_MS 500
/* Starts the drain: no more accepting (new clients wait in the listening
 * socket's backlog for the next server), every client's reading side shut
 * (what it sent before is read and answered; a later send of its fails
 * with EPIPE, so it knows the request was not taken), waits and watches
 * closed without an answer (a wait is sent again, a watch ends). */
void ctl_drain_begin(struct control_server *srv);
/* After a round of the loop: true when every client was answered and
 * closed (or the deadline passed: the rest are closed), having logged what
 * the drain did.  Waits and watches begun by lines read meanwhile close. */
bool ctl_drain_step(struct control_server *srv);
/* At the end of a fenced client's input: drops an unfinished line (the
 * fence cut it) instead of serving it as the last line. */
void ctl_drain_drop_partial(struct control_server *srv, struct client *c);
/* timeout (ms, -1 none) bounded by the drain's deadline. */
int ctl_drain_timeout(const struct control_server *srv, int timeout);

/* --- `metrics' (metrics.c) --- */

/* `metrics': the Prometheus text of the daemon, in "metrics"; the
 * requests are counted by the operations of ops (the op table, ctl_ops). */
void ctl_op_metrics(struct control_server *srv, struct client *c, struct ctl_request *req,
		    const struct ctl_op_desc *ops);

/* --- operations (ops.c) --- */

/* The op table: a row per enum ctl_op, in its order. */
extern const struct ctl_op_desc ctl_ops[CTL_OP_COUNT];

/* Parses one request line, checks the peer may run it, runs it and answers. */
void ctl_ops_handle_line(struct control_server *srv, struct client *c, const char *line,
			 size_t len);

/* --- a connection (conn.c) --- */

/* Closes c's socket and frees it with everything it holds. */
void ctl_conn_free(struct client *c);
/* Reads what c sent (a bounded number of reads) and serves it. */
void ctl_conn_read(struct control_server *srv, struct client *c);
/* Serves the complete lines read so far, one at a time, holding back while
 * a wait is pending or the client is not reading its answers. */
void ctl_conn_serve(struct control_server *srv, struct client *c);

#endif
