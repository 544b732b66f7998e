/* SPDX-License-Identifier: MIT */
/* plugfs deregister: removes one registration, or every one of an alloc. */
#include <stdbool.h>
#include <stdio.h>

#include "commands.h"
#include "ctlcli.h"

struct deregister {
	const char *type, *name, *alloc; /* --type, --name, --alloc, or NULL */
	bool quiet;			 /* -q: nothing on success */
};

static int deregister_option(void *st, int c, char *arg)
{
	struct deregister *d = st;

	switch (c) {
	case 't':
		d->type = arg;
		break;
	case 'n':
		d->name = arg;
		break;
	case 'a':
		d->alloc = arg;
		break;
	case 'q':
		d->quiet = true;
		break;
	}
	return EXIT_OK;
}

static int deregister_request(void *st, const struct cli_args *args, json_t **req, int *timeout_ms)
{
	const struct deregister *d = st;

	if (!d->alloc)
		return cli_usage_error("deregister", "--alloc is required");
	if (!d->type != !d->name)
		return cli_usage_error(
		    "deregister", "--type and --name go together: give both (one registration) "
				  "or neither (every registration of the alloc)");
	*req = json_pack("{s:s, s:s}", "op", "deregister", "alloc", d->alloc);
	if (!*req || (d->type && (json_object_set_new(*req, "type", json_string(d->type)) ||
				  json_object_set_new(*req, "name", json_string(d->name))))) {
		cli_error("deregister", "values must be UTF-8 text");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int deregister_print(void *st, const struct cli_args *args, json_t *resp,
			    const struct ctlcli_conn *conn)
{
	const struct deregister *d = st;
	json_int_t removed = json_integer_value(json_object_get(resp, "removed"));

	if (d->quiet)
		return EXIT_OK;
	if (d->type)
		printf("%s/%s: %s %s\n", d->type, d->name, d->alloc,
		       removed ? "deregistered" : "was not registered (nothing changed)");
	else
		printf("%s: %lld registration%s removed\n", d->alloc, (long long)removed,
		       removed == 1 ? "" : "s");
	return EXIT_OK;
}

static const struct option deregister_longopts[] = {
    {"type", required_argument, NULL, 't'},
    {"name", required_argument, NULL, 'n'},
    {"alloc", required_argument, NULL, 'a'},
    {"quiet", no_argument, NULL, 'q'},
    {NULL, 0, NULL, 0},
};

static const struct ctlcli_verb deregister_verb = {
    .cli =
	{
	    .name = "deregister",
	    .usage = "Usage: plugfs deregister --type T --name N --alloc A [-q] [-c FILE]\n"
		     "       plugfs deregister --alloc A [-q] [-c FILE]\n\n"
		     "Removes the registration of allocation A from plugin T/N, or with --alloc\n"
		     "alone every registration of A under every type, in one transaction.\n"
		     "Removing what is not registered succeeds and changes nothing.  Says\n"
		     "what it removed (nothing with -q).\n\n"
		     "  -t, --type T      plugin type\n"
		     "  -n, --name N      plugin name\n"
		     "  -a, --alloc A     allocation id (required)\n"
		     "  -q, --quiet       print nothing on success (errors still)\n"
		     "  -c FILE           config file (for control.socket)\n\n"
		     "Exit codes: 0 done, 1 rejected, 2 usage error, 3 daemon unreachable.\n",
	    .shortopts = "t:n:a:q",
	    .longopts = deregister_longopts,
	    .option = deregister_option,
	},
    .request = deregister_request,
    .print = deregister_print,
};

int deregister_main(int argc, char *argv[])
{
	struct deregister d = {0};

	return ctlcli_run(&deregister_verb, &d, argc, argv);
}
