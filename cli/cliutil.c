/* SPDX-License-Identifier: MIT */
#include "cliutil.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "pathtrust.h"

/* The next getopt_long call starts afresh on a new argv (state parses twice:
 * `state -c F dump --json`). */
static void getopt_reset(void)
{
	optind = 0; /* glibc: 0 re-initialises getopt completely */
	opterr = 0;
}

__attribute__((format(printf, 2, 0))) static void vmessage(const char *cmd, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* Under systemd (`plugfs mount' failing to start, stop-post) at
	 * priority error in the journal. */
	fprintf(stderr, "%splugfs%s%s: %s\n", plog_journal() ? "<3>" : "", cmd ? " " : "",
		cmd ? cmd : "", msg);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(cmd, fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(cmd, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try `plugfs %s --help'.\n", cmd);
	return EXIT_USAGE;
}

/* Whether word ("--name=VALUE", the name perhaps abbreviated) names a long
 * option of longopts that takes no argument and returns val. */
static bool is_flag_with_value(const struct option *longopts, const char *word, int val)
{
	const char *eq = strchr(word, '=');
	size_t len;

	if (strncmp(word, "--", 2) != 0 || !eq)
		return false;
	len = (size_t)(eq - word - 2);
	for (const struct option *o = longopts; o->name; o++)
		if (o->has_arg == no_argument && o->val == val &&
		    strncmp(o->name, word + 2, len) == 0)
			return true;
	return false;
}

/* Reports what getopt_long returned as '?' (unknown option, or an argument to
 * an option that takes none) or ':' (missing argument), naming the option as
 * typed; returns EXIT_USAGE. */
static int option_error(const char *cmd, int c, char *const argv[], const struct option *longopts)
{
	/* Short options: getopt puts the letter in optopt.  Long ones: optopt is
	 * 0 for an unknown one, the option's value for `--flag=VALUE', and the
	 * word is argv[optind - 1]. */
	const char *word = optind > 0 ? argv[optind - 1] : "";
	bool is_long = strncmp(word, "--", 2) == 0 && (c == ':' || optopt == 0);

	if (c == ':') {
		if (is_long)
			return cli_usage_error(cmd, "option `%s' needs an argument", word);
		return cli_usage_error(cmd, "option `-%c' needs an argument", optopt);
	}
	if (optopt != 0 && is_flag_with_value(longopts, word, optopt))
		return cli_usage_error(cmd, "option `%.*s' takes no argument",
				       (int)(strchr(word, '=') - word), word);
	if (is_long || optopt == 0)
		return cli_usage_error(cmd, "unknown option `%s'", word);
	return cli_usage_error(cmd, "unknown option `-%c'", optopt);
}

int cli_parse(const struct cli_verb *v, void *st, int argc, char *argv[], struct cli_args *args)
{
	struct option longopts[CLI_LONGOPTS_MAX + 3] = {
	    {"help", no_argument, NULL, 'h'},
	};
	char shortopts[64];
	size_t n = 1;
	int c, rc;

	if (v->json)
		longopts[n++] = (struct option){"json", no_argument, NULL, 'j'};
	for (const struct option *o = v->longopts; o && o->name; o++) {
		if (n + 1 >= sizeof(longopts) / sizeof(longopts[0])) {
			cli_error(v->name, "more than %d options of its own", CLI_LONGOPTS_MAX);
			return EXIT_FAILED;
		}
		longopts[n++] = *o;
	}
	/* '+' stops at the first operand; ':' keeps getopt silent (and tells a
	 * missing argument from an unknown option) so that cli_option_error
	 * prints the message. */
	snprintf(shortopts, sizeof(shortopts), "%s:c:h%s", v->subcommands ? "+" : "",
		 v->shortopts ? v->shortopts : "");
	getopt_reset();
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == 'c') {
			args->config = optarg;
		} else if (c == 'h') {
			fputs(v->usage, stdout);
			return EXIT_OK;
		} else if (c == 'j' && v->json) {
			args->json = true;
		} else if (c == '?' || c == ':' || !v->option) {
			return option_error(v->name, c, argv, longopts);
		} else {
			rc = v->option(st, c, optarg);
			if (rc != EXIT_OK)
				return rc;
		}
	}
	args->argc = argc - optind;
	args->argv = argv + optind;
	if (v->n_operands != CLI_OPERANDS_ANY && args->argc < v->n_operands)
		return cli_usage_error(v->name, "missing argument %s", v->operands);
	if (v->n_operands != CLI_OPERANDS_ANY && args->argc > v->n_operands)
		return cli_usage_error(v->name, "unexpected argument `%s'",
				       args->argv[v->n_operands]);
	return CLI_RUN;
}

void cli_unreachable(const char *cmd, const struct plugfs_config *cfg, int neg_errno,
		     const char *detail)
{
	const char *sock = cfg->control_socket;
	const char *group = cfg->control_group;
	bool have_group = group && group[0];

	switch (-neg_errno) {
	case ENOENT:
		cli_error(cmd,
			  "no plugfs daemon: %s does not exist (the daemon is not running, or "
			  "[control] socket names another path)",
			  sock);
		break;
	case ECONNREFUSED:
		cli_error(cmd,
			  "no plugfs daemon answers at %s: the socket is stale, left by a daemon "
			  "that crashed or was killed; starting plugfs (systemctl start plugfs) "
			  "replaces it",
			  sock);
		break;
	case EPERM:
	case ELOOP:
	case ENOTDIR:
	case EINVAL:
		/* The socket or its directories cannot be trusted (control_connect
		 * checked them before sending anything): its message says why. */
		if (detail && detail[0]) {
			cli_error(cmd, "%s", detail);
			break;
		}
		/* fall through */
	case EACCES:
		cli_error(cmd,
			  "permission denied on %s: the control socket is for root%s%s%s; this "
			  "is uid %u (run it as root, %s)",
			  sock, have_group ? " and group `" : " only ([control] group is not set)",
			  have_group ? group : "", have_group ? "' ([control] group)" : "",
			  (unsigned)geteuid(),
			  have_group ? "or join that group" : "or set [control] group for others");
		break;
	case ENAMETOOLONG:
		cli_error(cmd, "[control] socket `%s' is too long for a Unix socket path", sock);
		break;
	case ENOTSOCK:
		cli_error(cmd, "%s is not a socket ([control] socket names the daemon's)", sock);
		break;
	default:
		cli_error(cmd, "cannot connect to the plugfs daemon at %s: %s", sock,
			  strerror(-neg_errno));
	}
}

const char *cli_strip_verb(const char *cmd, const char *msg)
{
	size_t n = strcspn(cmd, " ");

	if (msg && strncmp(msg, cmd, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
		return msg + n + 2;
	return msg;
}

/* Edit distance of a and b with adjacent swaps (optimal string alignment),
 * up to 32 characters each; larger for longer words. */
static size_t typo_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[33][33];

	if (la > 32 || lb > 32)
		return (size_t)-1;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *cli_closest(const char *word, const char *const *words, size_t n)
{
	const char *best = NULL;
	size_t best_d = 3, len = strlen(word);

	for (size_t i = 0; i < n; i++) {
		size_t d = typo_distance(word, words[i]);

		if (d < best_d && d * 2 < len) {
			best = words[i];
			best_d = d;
		}
	}
	return best;
}

int cli_load_config(const char *cmd, const char *path, struct plugfs_config *cfg)
{
	char err[CONFIG_ERR_MAX];

	if (config_resolve(path, cfg, err, sizeof(err)) < 0) {
		cli_error(cmd, "%s", err);
		return EXIT_FAILED;
	}
	plog_set_level(cfg->log_level);
	return EXIT_OK;
}

int cli_finish_output(const char *cmd, int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(cmd, "cannot write the output: %s", strerror(errno));
		return EXIT_FAILED;
	}
	return rc;
}

void cli_state_not_regular(const char *cmd, const char *path, mode_t mode)
{
	cli_error(cmd, "state.path `%s': is %s, not a regular file", path, plugfs_mode_noun(mode));
}

int cli_make_parents(const char *cmd, const char *path)
{
	char err[PATH_MAX + 128];

	if (plugfs_prepare_file("state.path", path, err, sizeof(err)) != 0) {
		cli_error(cmd, "%s", err);
		return EXIT_FAILED;
	}
	return EXIT_OK;
}
