/* SPDX-License-Identifier: MIT */
/*
 * plugfs state import FILE | dump [--json] | check: offline work on the state
 * file (state.path of the config).  These open the file directly, without a
 * daemon; a running daemon sees imported registrations after a restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliutil.h"
#include "commands.h"
#include "config.h"
#include "control.h"
#include "err.h"
#include "fsutil.h"
#include "registry.h"
#include "timefmt.h"

#define IMPORT_FILE_MAX (64 * 1024 * 1024)

static const struct cli_verb state_verb = {
    .name = "state",
    .usage = "Usage: plugfs state [-c FILE] <subcommand> [<args>]\n"
	     "\n"
	     "Works offline on the state file (state.path of the config).\n"
	     "\n"
	     "Subcommands:\n"
	     "  import FILE    Imports the registrations of a legacy registry JSON file\n"
	     "                 ({\"Plugins\": {type: {name: PluginInfo}}}), all or none\n"
	     "  dump [--json]  Prints every plugin and its registrations, active first\n"
	     "  check          Checks the state file (integrity, schema version, rows)\n"
	     "\n"
	     "Options:\n"
	     "  -c FILE     the config file (else $PLUGFS_CONFIG, else\n"
	     "              " CONFIG_DEFAULT_PATH " if it exists, else the defaults)\n"
	     "  -h, --help  this help; `plugfs state <subcommand> --help' for one\n"
	     "\n"
	     "Exit codes: 0 success, 1 the operation failed, 2 usage error.\n",
    .subcommands = true,
    .n_operands = CLI_OPERANDS_ANY,
};

/* A subcommand: its command line and what it does with the config. */
struct sub {
	const char *name; /* "import" */
	struct cli_verb verb;
	int (*run)(const struct plugfs_config *cfg, char *operands[], bool json);
};

/* The whole of path, NUL-terminated, into *out (malloc'd). */
static int read_file(const char *path, char **out, size_t *len_out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int fd = -1, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "cannot open %s: %s", path, strerror(-rc));
		goto out;
	}
	rc = plugfs_read_fd(fd, IMPORT_FILE_MAX, &buf, &len);
	if (rc == -EFBIG) {
		plugfs_seterr(err, errlen, "%s: larger than %d MiB", path,
			      IMPORT_FILE_MAX / (1024 * 1024));
		goto out;
	}
	if (rc == -ENOMEM) {
		plugfs_seterr(err, errlen, "%s: out of memory", path);
		goto out;
	}
	if (rc < 0) {
		plugfs_seterr(err, errlen, "cannot read %s: %s", path, strerror(-rc));
		goto out;
	}
	if (strlen(buf) != len) {
		rc = plugfs_errf(err, errlen, -EINVAL,
				 "%s: NUL byte in the file; expected JSON text", path);
		goto out;
	}
	*out = buf;
	*len_out = len;
	buf = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

/* Whether the state file exists: dump and check never create one.  EXIT_OK
 * with *exists set, or EXIT_FAILED after printing why it cannot be used. */
static int state_file_exists(const char *cmd, const char *path, bool *exists)
{
	struct stat st;

	*exists = false;
	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			return EXIT_OK;
		cli_error(cmd, "cannot access the state file %s: %s", path, strerror(errno));
		return EXIT_FAILED;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_state_not_regular(cmd, path, st.st_mode);
		return EXIT_FAILED;
	}
	*exists = true;
	return EXIT_OK;
}

/* read_only: dump never writes the file (no migration, no type rows, no
 * tombstone expiry). */
static int open_registry(const char *cmd, const struct plugfs_config *cfg, bool read_only,
			 struct registry **reg)
{
	struct registry_options opts;
	char err[REG_ERR_MAX] = "";

	config_registry_options(cfg, &opts);
	opts.read_only = read_only;
	if (registry_open(cfg->state_path, &opts, reg, err, sizeof(err)) < 0) {
		cli_error(cmd, "%s", err); /* the registry names the file */
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

static int run_import(const struct plugfs_config *cfg, char *operands[], bool json)
{
	static const char cmd[] = "state import";
	const char *file = operands[0];
	struct registry *reg = NULL;
	char *text = NULL;
	char err[REG_ERR_MAX] = "";
	size_t len = 0, imported = 0;
	int rc = EXIT_FAILED;

	if (read_file(file, &text, &len, err, sizeof(err)) < 0) {
		cli_error(cmd, "%s", err);
		goto out;
	}
	if (cli_make_parents(cmd, cfg->state_path) != EXIT_OK ||
	    open_registry(cmd, cfg, false, &reg) != EXIT_OK)
		goto out;
	if (registry_import_legacy_json(reg, text, &imported, err, sizeof(err)) < 0) {
		cli_error(cmd, "%s: %s; nothing was imported", file, err);
		goto out;
	}
	printf("imported %zu registration%s from %s into %s\n", imported, imported == 1 ? "" : "s",
	       file, cfg->state_path);
	rc = EXIT_OK;
out:
	if (reg)
		registry_close(reg);
	free(text);
	return cli_finish_output(cmd, rc);
}

static void print_registration(const struct registration *r, bool active)
{
	char reg_at[32], upd_at[32];

	plugfs_format_time(r->registered_at, -1, reg_at, sizeof(reg_at));
	plugfs_format_time(r->updated_at, -1, upd_at, sizeof(upd_at));
	printf("  %s %s  kind %s  version %s  seq %" PRId64 "\n", active ? "*" : " ", r->alloc,
	       reg_kind_name(r->kind) ? reg_kind_name(r->kind) : "?",
	       r->version && *r->version ? r->version : "-", r->seq);
	printf("      socket      %s\n", r->socket);
	if (r->probe != REG_PROBE_DEFAULT)
		printf("      probe       %s%s%s\n", reg_probe_name(r->probe),
		       r->csi_name && *r->csi_name ? "  plugin name " : "",
		       r->csi_name && *r->csi_name ? r->csi_name : "");
	if (r->source && *r->source)
		printf("      source      %s\n", r->source);
	printf("      registered  %s", reg_at);
	if (r->updated_at != r->registered_at)
		printf("  updated %s", upd_at);
	printf("\n");
	if (r->n_options) {
		printf("      options    ");
		for (size_t k = 0; k < r->n_options; k++)
			printf(" %s=%s", r->options[k].key, r->options[k].value);
		printf("\n");
	}
}

/* One plugin of `state dump' as text. */
static void print_plugin(const struct reg_plugin *p, bool first)
{
	const struct registration *act = reg_plugin_active(p);

	if (!first)
		printf("\n");
	printf("%s/%s  active %s\n", p->type, p->name, act ? act->alloc : "(none)");
	for (size_t j = 0; j < p->n_regs; j++)
		print_registration(&p->regs[j], &p->regs[j] == act);
}

/* A state file that does not exist yet dumps as empty (and stays absent).
 * The plugins go out one at a time (control_cursor): the output is never
 * built whole. */
static int run_dump(const struct plugfs_config *cfg, char *operands[], bool json)
{
	static const char cmd[] = "state dump";
	struct registry *reg = NULL;
	struct control_cursor *cur = NULL;
	struct control_json_writer w;
	size_t n_plugins = 0, n_regs = 0;
	bool exists;
	int rc = EXIT_FAILED, ret = 0;

	if (state_file_exists(cmd, cfg->state_path, &exists) != EXIT_OK)
		goto out;
	if (exists) {
		if (open_registry(cmd, cfg, true, &reg) != EXIT_OK)
			goto out;
		ret = control_cursor_open(reg, NULL, &cur);
		if (ret < 0) {
			cli_error(cmd, "cannot read the registrations: %s", strerror(-ret));
			goto out;
		}
	}
	if (json)
		control_json_plugins_begin(&w, stdout);
	while (cur && ret == 0) {
		struct reg_plugin p;
		json_t *j;

		ret = control_cursor_next(cur, &p);
		if (ret <= 0)
			break;
		ret = 0;
		if (json) {
			j = control_json_plugin(&p);
			ret = j ? control_json_plugins_add(&w, j) : -ENOMEM;
			json_decref(j);
		} else {
			print_plugin(&p, n_plugins == 0);
		}
		n_plugins++;
		n_regs += p.n_regs;
		reg_plugin_free_contents(&p);
	}
	if (ret == 0 && json)
		ret = control_json_plugins_end(&w);
	if (ret < 0) {
		cli_error(cmd, "cannot write the output: %s", strerror(-ret));
		goto out;
	}
	if (!json) {
		if (n_plugins)
			printf("\n");
		printf("%s%s: %zu plugin%s, %zu registration%s\n", cfg->state_path,
		       exists ? "" : " (no file yet)", n_plugins, n_plugins == 1 ? "" : "s", n_regs,
		       n_regs == 1 ? "" : "s");
	}
	rc = EXIT_OK;
out:
	control_cursor_free(cur);
	if (reg)
		registry_close(reg);
	return cli_finish_output(cmd, rc);
}

static int run_check(const struct plugfs_config *cfg, char *operands[], bool json)
{
	static const char cmd[] = "state check";
	char err[REG_ERR_MAX] = "";

	bool exists;

	if (state_file_exists(cmd, cfg->state_path, &exists) != EXIT_OK)
		return EXIT_FAILED;
	if (!exists) {
		cli_error(cmd, "no state file at %s (state.path)", cfg->state_path);
		return EXIT_FAILED;
	}
	int rc = registry_check_file(cfg->state_path, err, sizeof(err));

	if (rc < 0) {
		cli_error(cmd, "%s", err); /* the registry names the file */
		return EXIT_FAILED;
	}
	if (rc == 1)
		printf("%s: ok, once rolled back: `%s-journal' holds a transaction that did not "
		       "end; `plugfs mount' rolls it back (checked on a rolled-back copy; the "
		       "file is unchanged)\n",
		       cfg->state_path, cfg->state_path);
	else if (plugfs_file_empty(cfg->state_path))
		printf("%s: ok, but empty (0 bytes): no registry yet; `plugfs mount' starts a new, "
		       "empty one in it\n",
		       cfg->state_path);
	else
		printf("%s: ok\n", cfg->state_path);
	return cli_finish_output(cmd, EXIT_OK);
}

/* The --help of a subcommand: its usage line, then what it does. */
#define SUB_USAGE(cmd, args, help) "Usage: plugfs " cmd " [-c FILE] " args "\n\n" help "\n"

static const struct sub subs[] = {
    {"import",
     {.name = "state import",
      .usage = SUB_USAGE(
	  "state import", "FILE",
	  "Imports the registrations of a legacy registry JSON file ({\"Plugins\": {type:\n"
	  "{name: PluginInfo}}}) into the state file, in one transaction: all or none.\n"
	  "Each entry is registered as if by `plugfs register', in document order; its\n"
	  "legacy Type (controller, node, monolith) becomes its kind."),
      .n_operands = 1,
      .operands = "FILE"},
     run_import},
    {"dump",
     {.name = "state dump",
      .usage =
	  SUB_USAGE("state dump", "[--json]",
		    "Prints every plugin with its registrations, active first.  --json prints the\n"
		    "shape of `plugfs list --json': {\"plugins\":[{\"type\",\"name\",\"active\",\n"
		    "\"registrations\":[...]}]}.  A state file that does not exist yet dumps as\n"
		    "empty and is not created.  Never writes the state file: a version-1 file\n"
		    "is shown as `plugfs mount' or `state import' would migrate it, and stays\n"
		    "version 1."),
      .shortopts = "j",
      .json = true},
     run_dump},
    {"check",
     {.name = "state check",
      .usage = SUB_USAGE(
	  "state check", "",
	  "Checks the state file without changing it: its length, SQLite integrity\n"
	  "(integrity_check: the pages and every index), a schema version this plugfs\n"
	  "knows, every row by the rules of `plugfs register'.  A file with a hot journal\n"
	  "(a transaction that did not end) is checked rolled back, on a copy.  Exit code\n"
	  "0 when it is good.")},
     run_check},
};

/* config: the -c FILE given before the subcommand, or NULL. */
static int run_sub(const struct sub *s, int argc, char *argv[], const char *config)
{
	struct cli_args args = {.config = config};
	struct plugfs_config cfg = {0};
	int rc;

	rc = cli_parse(&s->verb, NULL, argc, argv, &args);
	if (rc != CLI_RUN)
		return cli_finish_output(s->verb.name, rc);
	if (cli_load_config(s->verb.name, args.config, &cfg) != EXIT_OK)
		return EXIT_FAILED;
	rc = s->run(&cfg, args.argv, args.json);
	config_free(&cfg);
	return rc;
}

int state_main(int argc, char *argv[])
{
	struct cli_args args = {0};
	int rc;

	rc = cli_parse(&state_verb, NULL, argc, argv, &args);
	if (rc != CLI_RUN)
		return cli_finish_output("state", rc);
	if (args.argc == 0)
		return cli_usage_error("state", "missing subcommand: import, dump or check");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (strcmp(args.argv[0], subs[i].name) == 0)
			return run_sub(&subs[i], args.argc, args.argv, args.config);
	return cli_usage_error("state", "unknown subcommand `%s'; expected import, dump or check",
			       args.argv[0]);
}
