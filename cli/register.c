/* SPDX-License-Identifier: MIT */
/* plugfs register: registers one allocation under one or more types. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "ctlcli.h"

struct reg {
	json_t *types;					  /* the --type values, an array */
	json_t *options;				  /* the --option values, KEY: VALUE */
	const char *name, *alloc, *sock, *version, *kind; /* or NULL */
	const char *probe, *csi_name;			  /* or NULL */
	bool quiet;					  /* -q: nothing on success */
};

/* --option KEY=VALUE into r->options: each KEY once. */
static int add_option(struct reg *r, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *key = NULL;
	int rc = EXIT_USAGE;

	if (!eq) {
		cli_error("register", "--option `%s' must be KEY=VALUE (no `=' found)", arg);
		goto out;
	}
	key = strndup(arg, (size_t)(eq - arg));
	if (!key) {
		rc = EXIT_FAILED;
		goto out;
	}
	if (json_object_get(r->options, key)) {
		cli_error("register", "--option `%s' is given twice", key);
		goto out;
	}
	if (json_object_set_new(r->options, key, json_string(eq + 1))) {
		cli_error("register", "--option `%s' must be UTF-8 text", arg);
		goto out;
	}
	rc = EXIT_OK;
out:
	free(key);
	return rc;
}

static int register_option(void *st, int c, char *arg)
{
	struct reg *r = st;

	switch (c) {
	case 't':
		/* json_string() refuses text that is not UTF-8. */
		if (json_array_append_new(r->types, json_string(arg))) {
			cli_error("register", "--type must be UTF-8 text");
			return EXIT_USAGE;
		}
		break;
	case 'n':
		r->name = arg;
		break;
	case 'a':
		r->alloc = arg;
		break;
	case 's':
		r->sock = arg;
		break;
	case 'V':
		r->version = arg;
		break;
	case 'k':
		r->kind = arg;
		break;
	case 'o':
		return add_option(r, arg);
	case 'P':
		r->probe = arg;
		break;
	case 'C':
		r->csi_name = arg;
		break;
	case 'q':
		r->quiet = true;
		break;
	}
	return EXIT_OK;
}

static int register_request(void *st, const struct cli_args *args, json_t **req, int *timeout_ms)
{
	const struct reg *r = st;
	enum reg_probe probe = REG_PROBE_DEFAULT;

	if (json_array_size(r->types) == 0 || !r->name || !r->alloc || !r->sock)
		return cli_usage_error("register", "%s is required",
				       json_array_size(r->types) == 0 ? "--type"
				       : !r->name		      ? "--name"
				       : !r->alloc		      ? "--alloc"
								      : "--socket");
	if (r->probe && reg_probe_parse(r->probe, &probe) != 0)
		return cli_usage_error("register", "--probe `%s' must be none, connect or csi",
				       r->probe);
	if (r->csi_name && probe != REG_PROBE_CSI)
		return cli_usage_error("register",
				       "--csi-name needs --probe csi (the name is what the csi "
				       "probe's GetPluginInfo must answer)");
	if (r->csi_name) {
		char msg[REG_ERR_MAX];

		if (reg_validate_csi_name("--csi-name", r->csi_name, msg, sizeof(msg)) < 0)
			return cli_usage_error("register", "%s", msg);
	}
	*req = json_pack("{s:s, s:O, s:s?, s:s?, s:s?}", "op", "register", "types", r->types,
			 "name", r->name, "alloc", r->alloc, "socket", r->sock);
	if (!*req || !json_string_value(json_object_get(*req, "name")) ||
	    !json_string_value(json_object_get(*req, "alloc")) ||
	    !json_string_value(json_object_get(*req, "socket")) ||
	    (r->version && json_object_set_new(*req, "version", json_string(r->version))) ||
	    (r->kind && json_object_set_new(*req, "kind", json_string(r->kind))) ||
	    (r->probe && json_object_set_new(*req, "probe", json_string(r->probe))) ||
	    (r->csi_name && json_object_set_new(*req, "csi_name", json_string(r->csi_name))) ||
	    json_object_set(*req, "options", r->options)) {
		cli_error("register", "values must be UTF-8 text");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int register_print(void *st, const struct cli_args *args, json_t *resp,
			  const struct ctlcli_conn *conn)
{
	const struct reg *r = st;
	json_t *p, *h;
	size_t i;

	json_array_foreach(json_object_get(resp, "plugins"), i, p)
	{
		if (r->quiet)
			break;
		printf("%s/%s: registered %s, active %s\n",
		       json_string_value(json_object_get(p, "type")),
		       json_string_value(json_object_get(p, "name")), r->alloc,
		       json_string_value(json_object_get(p, "active")));
	}
	h = json_object_get(resp, "health");
	if (h && strcmp(json_string_value(json_object_get(h, "state")) ?: "", "dead") == 0)
		fprintf(stderr,
			"plugfs register: warning: %s is dead (%s): it does not take over until "
			"a probe of it succeeds\n",
			r->alloc, json_string_value(json_object_get(h, "error")) ?: "probe failed");
	return EXIT_OK;
}

static const struct option register_longopts[] = {
    {"type", required_argument, NULL, 't'},
    {"name", required_argument, NULL, 'n'},
    {"alloc", required_argument, NULL, 'a'},
    {"socket", required_argument, NULL, 's'},
    {"version", required_argument, NULL, 'V'},
    {"kind", required_argument, NULL, 'k'},
    {"option", required_argument, NULL, 'o'},
    {"probe", required_argument, NULL, 'P'},
    {"csi-name", required_argument, NULL, 'C'},
    {"quiet", no_argument, NULL, 'q'},
    {NULL, 0, NULL, 0},
};

static const struct ctlcli_verb register_verb = {
    .cli =
	{
	    .name = "register",
	    .usage =
		"Usage: plugfs register --type T [--type T2] --name N --alloc A --socket PATH\n"
		"                       [--version V] [--kind controller|node|monolith]\n"
		"                       [--option KEY=VALUE]... [--probe none|connect|csi]\n"
		"                       [--csi-name NAME] [-q] [-c FILE]\n\n"
		"Registers allocation A of plugin N under each type, in one transaction.\n"
		"Registering an alloc already in the list updates it in place; a new alloc\n"
		"becomes the active one.  Prints the plugin(s) as they are afterwards\n"
		"(nothing with -q).\n\n"
		"  -t, --type T        plugin type (repeat for a monolith: csi-controller, "
		"csi-node)\n"
		"  -n, --name N        plugin name\n"
		"  -a, --alloc A       allocation id\n"
		"  -s, --socket PATH   absolute path of the allocation's socket\n"
		"  -V, --version V     plugin version (optional)\n"
		"  -k, --kind KIND     controller, node or monolith (default: from the type)\n"
		"  -o, --option K=V    an option, repeatable\n"
		"  -P, --probe MODE    how to probe this allocation: none, connect or csi\n"
		"                      (default: its type's [probe] mode)\n"
		"  -C, --csi-name NAME with --probe csi: the plugin name GetPluginInfo must\n"
		"                      answer (a mismatch is dead)\n"
		"  -q, --quiet         print nothing on success (errors and warnings still)\n"
		"  -c FILE             config file (for control.socket)\n\n"
		"Exit codes: 0 registered, 1 rejected, 2 usage error, 3 daemon unreachable.\n",
	    .shortopts = "t:n:a:s:V:k:o:P:C:q",
	    .longopts = register_longopts,
	    .option = register_option,
	},
    .request = register_request,
    .print = register_print,
};

int register_main(int argc, char *argv[])
{
	struct reg r = {.types = json_array(), .options = json_object()};
	int rc = EXIT_FAILED;

	if (r.types && r.options)
		rc = ctlcli_run(&register_verb, &r, argc, argv);
	json_decref(r.types);
	json_decref(r.options);
	return rc;
}
