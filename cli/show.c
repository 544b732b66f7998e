/* SPDX-License-Identifier: MIT */
/* plugfs show: the registrations of one plugin, active first. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "ctlcli.h"

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s && s[0] ? s : "-";
}

/* Whether registration r is the one the plugin's "active" names. */
static bool is_active(json_t *plugin, json_t *r)
{
	const char *active = json_string_value(json_object_get(plugin, "active"));
	const char *alloc = json_string_value(json_object_get(r, "alloc"));

	return active && alloc && strcmp(active, alloc) == 0;
}

static int show_request(void *st, const struct cli_args *args, json_t **req, int *timeout_ms)
{
	return ctlcli_plugin_request("show", args->argc, args->argv, req);
}

static int show_print(void *st, const struct cli_args *args, json_t *resp,
		      const struct ctlcli_conn *conn)
{
	json_t *plugin = json_object_get(resp, "plugin"), *r;
	size_t i;

	if (args->json) {
		ctlcli_print_json(plugin);
		return EXIT_OK;
	}
	printf("%s/%s: active %s%s\n", str(plugin, "type"), str(plugin, "name"),
	       str(plugin, "active"),
	       json_object_get(plugin, "alive") &&
		       json_integer_value(json_object_get(plugin, "alive")) == 0
		   ? " (none is alive: the most recent)"
		   : "");
	json_array_foreach(json_object_get(plugin, "registrations"), i, r)
	{
		const char *key;
		json_t *v, *h;

		printf("%s %s  seq %lld  %s  kind %s  version %s  registered %s  updated %s\n",
		       is_active(plugin, r) ? "*" : " ", str(r, "alloc"),
		       (long long)json_integer_value(json_object_get(r, "seq")), str(r, "socket"),
		       str(r, "kind"), str(r, "version"), str(r, "registered_at"),
		       str(r, "updated_at"));
		if ((h = json_object_get(r, "health")))
			printf("    health %s  last probe %s  failures %lld%s%s\n", str(h, "state"),
			       str(h, "last_probe"),
			       (long long)json_integer_value(json_object_get(h, "failures")),
			       json_string_value(json_object_get(h, "error")) ? "  error " : "",
			       json_string_value(json_object_get(h, "error"))
				   ? json_string_value(json_object_get(h, "error"))
				   : "");
		if (json_string_value(json_object_get(r, "probe")))
			printf("    probe %s%s%s (its own, over its type's)\n", str(r, "probe"),
			       json_string_value(json_object_get(r, "csi_name")) ? "  plugin name "
										 : "",
			       json_string_value(json_object_get(r, "csi_name"))
				   ? json_string_value(json_object_get(r, "csi_name"))
				   : "");
		if (json_string_value(json_object_get(r, "source")))
			printf("    source %s\n", str(r, "source"));
		json_object_foreach(json_object_get(r, "options"), key, v)
		    printf("    option %s=%s\n", key, json_string_value(v));
	}
	return EXIT_OK;
}

static const struct ctlcli_verb show_verb = {
    .cli =
	{
	    .name = "show",
	    .usage = "Usage: plugfs show TYPE NAME [--json] [-c FILE]\n\n"
		     "Shows the registrations of plugin NAME of TYPE in list order, the active\n"
		     "one first.  --json prints the plugin in the shape of `plugfs state dump\n"
		     "--json': {\"type\",\"name\",\"active\",\"registrations\":[...]}.\n\n"
		     "      --json     JSON output\n"
		     "  -c FILE        config file (for control.socket)\n\n"
		     "Exit codes: 0 shown, 1 not registered or rejected, 2 usage error,\n"
		     "3 daemon unreachable.\n",
	    .json = true,
	    .n_operands = CLI_OPERANDS_ANY, /* TYPE NAME: ctlcli_plugin_request */
	},
    .request = show_request,
    .print = show_print,
};

int show_main(int argc, char *argv[])
{
	return ctlcli_run(&show_verb, NULL, argc, argv);
}
