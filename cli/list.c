/* SPDX-License-Identifier: MIT */
/* plugfs list: one row per plugin. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
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

	*req = json_pack("{s:s}", "op", "list");
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

static int list_print(void *st, const struct cli_args *args, json_t *resp,
		      const struct ctlcli_conn *conn)
{
	json_t *plugins = json_object_get(resp, "plugins"), *p;
	int wtype = 4, wname = 4, walloc = 6;
	size_t i;

	if (args->json) {
		json_t *snap = json_pack("{s:O}", "plugins", plugins);

		ctlcli_print_json(snap);
		json_decref(snap);
		return EXIT_OK;
	}
	json_array_foreach(plugins, i, p)
	{
		int n;

		if ((n = (int)strlen(str(p, "type"))) > wtype)
			wtype = n;
		if ((n = (int)strlen(str(p, "name"))) > wname)
			wname = n;
		if ((n = (int)strlen(str(p, "active"))) > walloc)
			walloc = n;
	}
	printf("%-*s  %-*s  %-*s  %-6s  %-7s  %s\n", wtype, "TYPE", wname, "NAME", walloc, "ACTIVE",
	       "ALLOCS", "HEALTH", "SOCKET");
	json_array_foreach(plugins, i, p)
	{
		json_t *regs = json_object_get(p, "registrations");
		json_t *act = active_reg(p);
		json_t *alive = json_object_get(p, "alive");
		char health[32];

		/* The active one's health; "none" alive when every one is dead. */
		if (!alive)
			snprintf(health, sizeof(health), "-");
		else if (json_integer_value(alive) == 0)
			snprintf(health, sizeof(health), "none");
		else
			snprintf(health, sizeof(health), "%s",
				 str(json_object_get(act, "health"), "state"));
		printf("%-*s  %-*s  %-*s  %-6zu  %-7s  %s\n", wtype, str(p, "type"), wname,
		       str(p, "name"), walloc, str(p, "active"), json_array_size(regs), health,
		       str(act, "socket"));
	}
	return EXIT_OK;
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
