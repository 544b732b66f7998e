/* SPDX-License-Identifier: MIT */
/*
 * plugfs list: one row per plugin.  The daemon streams the list (a line per
 * plugin, then an end line: docs/protocol.md), so --json goes out as it
 * comes in; the table keeps one short row per plugin to align its columns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "array.h"
#include "control.h"
#include "ctlcli.h"

struct list {
	const char *type; /* --type, or NULL */
};

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

static int list_option(void *st, int c, char *arg)
{
	struct list *l = st;

	l->type = arg; /* --type */
	return EXIT_OK;
}

static int list_request(void *st, const struct cli_args *args, json_t **req, int *timeout_ms)
{
	const struct list *l = st;

	*req = json_pack("{s:s, s:b}", "op", "list", "stream", 1);
	if (!*req || (l->type && json_object_set_new(*req, "type", json_string(l->type)))) {
		cli_error("list", "--type must be UTF-8 text");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The registration the plugin's "active" names (NULL when none). */
static json_t *active_reg(json_t *p)
{
	const char *active = json_string_value(json_object_get(p, "active"));
	json_t *r;
	size_t i;

	json_array_foreach(json_object_get(p, "registrations"), i, r)
	{
		const char *a = json_string_value(json_object_get(r, "alloc"));

		if (active && a && strcmp(active, a) == 0)
			return r;
	}
	return NULL;
}

/* One row of the table: the six columns, one allocation. */
struct row {
	char *text; /* "type\0name\0active\0health\0socket\0" */
	size_t n_regs;
};

struct table {
	struct row *rows;
	size_t n, cap;
	int wtype, wname, walloc;
};

static int table_add(struct table *t, json_t *p)
{
	const char *col[5];
	json_t *act = active_reg(p), *alive = json_object_get(p, "alive");
	char health[32], *text;
	size_t len = 0, off = 0;
	int n;

	/* The active one's health; "none" alive when every one is dead. */
	if (!alive)
		snprintf(health, sizeof(health), "-");
	else if (json_integer_value(alive) == 0)
		snprintf(health, sizeof(health), "none");
	else
		snprintf(health, sizeof(health), "%s", str(json_object_get(act, "health"), "state"));
	col[0] = str(p, "type");
	col[1] = str(p, "name");
	col[2] = str(p, "active");
	col[3] = health;
	col[4] = str(act, "socket");
	for (int i = 0; i < 5; i++)
		len += strlen(col[i]) + 1;
	if (PLUGFS_GROW(t->rows, t->cap, t->n, 256) != 0)
		return -1;
	if (!(text = malloc(len)))
		return -1;
	for (int i = 0; i < 5; i++) {
		memcpy(text + off, col[i], strlen(col[i]) + 1);
		off += strlen(col[i]) + 1;
	}
	t->rows[t->n++] = (struct row){text, json_array_size(json_object_get(p, "registrations"))};
	if ((n = (int)strlen(col[0])) > t->wtype)
		t->wtype = n;
	if ((n = (int)strlen(col[1])) > t->wname)
		t->wname = n;
	if ((n = (int)strlen(col[2])) > t->walloc)
		t->walloc = n;
	return 0;
}

static void table_print(const struct table *t)
{
	printf("%-*s  %-*s  %-*s  %-6s  %-7s  %s\n", t->wtype, "TYPE", t->wname, "NAME", t->walloc,
	       "ACTIVE", "ALLOCS", "HEALTH", "SOCKET");
	for (size_t i = 0; i < t->n; i++) {
		const char *c[5], *s = t->rows[i].text;

		for (int k = 0; k < 5; k++) {
			c[k] = s;
			s += strlen(s) + 1;
		}
		printf("%-*s  %-*s  %-*s  %-6zu  %-7s  %s\n", t->wtype, c[0], t->wname, c[1],
		       t->walloc, c[2], t->rows[i].n_regs, c[3], c[4]);
	}
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->rows[i].text);
	free(t->rows);
}

/* resp is the stream's header: the plugins follow, a line each, until the
 * end line, which says how many were sent. */
static int list_print(void *st, const struct cli_args *args, json_t *resp,
		      const struct ctlcli_conn *conn)
{
	struct table t = {.wtype = 4, .wname = 4, .walloc = 6};
	struct control_json_writer w;
	struct control_reader rd;
	char err[512] = "";
	int rc = EXIT_FAILED;

	control_reader_init(&rd, conn->fd);
	if (args->json)
		control_json_plugins_begin(&w, stdout);
	for (;;) {
		json_t *line = NULL, *p;

		if (control_reader_next(&rd, &line, -1, err, sizeof(err))) {
			cli_error(conn->cmd, "%s (socket %s)", err, conn->socket);
			rc = EXIT_UNREACHABLE;
			break;
		}
		if (json_object_get(line, "end")) {
			json_int_t n = json_integer_value(json_object_get(line, "plugins"));

			if (!json_is_true(json_object_get(line, "ok"))) {
				rc = ctlcli_print_error(conn->cmd, line);
			} else if ((size_t)n != (args->json ? w.n : t.n)) {
				cli_error(conn->cmd, "the daemon said %lld plugins, %zu came",
					  (long long)n, args->json ? w.n : t.n);
			} else if (args->json) {
				rc = control_json_plugins_end(&w) ? EXIT_FAILED : EXIT_OK;
			} else {
				table_print(&t);
				rc = EXIT_OK;
			}
			json_decref(line);
			break;
		}
		p = json_object_get(line, "plugin");
		if (!json_is_object(p) ||
		    (args->json ? control_json_plugins_add(&w, p) != 0 : table_add(&t, p) != 0)) {
			cli_error(conn->cmd, "%s", p ? "out of memory, or cannot write the output"
						     : "the daemon sent a line that is not a plugin");
			json_decref(line);
			break;
		}
		json_decref(line);
	}
	control_reader_free(&rd);
	table_free(&t);
	return rc;
}

static const struct option list_longopts[] = {
    {"type", required_argument, NULL, 't'},
    {NULL, 0, NULL, 0},
};

static const struct ctlcli_verb list_verb = {
    .cli =
	{
	    .name = "list",
	    .usage = "Usage: plugfs list [--type T] [--json] [-c FILE]\n\n"
		     "Lists the registered plugins, one row each: type, name, the active alloc,\n"
		     "its socket and the number of registrations.  --json prints the same shape\n"
		     "as `plugfs state dump --json': {\"plugins\":[...]}.\n\n"
		     "  -t, --type T   only plugins of this type\n"
		     "      --json     JSON output\n"
		     "  -c FILE        config file (for control.socket)\n\n"
		     "Exit codes: 0 listed, 1 rejected, 2 usage error, 3 daemon unreachable.\n",
	    .shortopts = "t:",
	    .longopts = list_longopts,
	    .json = true,
	    .option = list_option,
	},
    .request = list_request,
    .print = list_print,
};

int list_main(int argc, char *argv[])
{
	struct list l = {0};

	return ctlcli_run(&list_verb, &l, argc, argv);
}
