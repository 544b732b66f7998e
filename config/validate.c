/* SPDX-License-Identifier: MIT */
/*
 * The checks of plugfs.ini that need the whole file, run once it is read
 * (config_check_whole): at least one type, the control socket and the state
 * outside the mount, the [probe.TYPE] sections' types and the
 * [discover.NAME] sections' roots and types.  The message
 * names the line of the later of the keys involved.
 */
#include "config.h"
#include "config_internal.h"
#include "config_discover.h"
#include "config_probe.h"

#include <errno.h>
#include <string.h>

#include "registry.h"

/* A path at or below dir: dir itself, or under it by the registry's rule
 * (reg_path_under, the one socket_roots use). */
static bool path_inside(const char *path, const char *dir)
{
	return strcmp(path, dir) == 0 || reg_path_under(path, dir);
}

/* Checks that need the whole file; line = where the later key was set. */
void config_check_whole(struct parse_ctx *c)
{
	struct plugfs_config *cfg = c->cfg;
	unsigned l_types = 0, l_mnt = 0, l_sock = 0, l_state = 0;
	char q1[QUOTE_BUF], q2[QUOTE_BUF];

	for (size_t i = 0; i < CONFIG_N_KEYS; i++) {
		if (config_keys[i].off == F(types))
			l_types = c->key_line[i];
		else if (config_keys[i].off == F(mountpoint))
			l_mnt = c->key_line[i];
		else if (config_keys[i].off == F(control_socket))
			l_sock = c->key_line[i];
		else if (config_keys[i].off == F(state_path))
			l_state = c->key_line[i];
	}
	if (cfg->n_types == 0)
		config_fail(c, l_types, -EINVAL,
			    "[registry] types is empty; expected at least one plugin type, e.g. "
			    "`csi-controller csi-node'");
	else if (path_inside(cfg->control_socket, cfg->mountpoint))
		config_fail(
		    c, l_sock > l_mnt ? l_sock : l_mnt, -EINVAL,
		    "[control] socket `%s' is inside [mount] mountpoint `%s'; expected a path "
		    "outside the mount",
		    config_quote(cfg->control_socket, q1, sizeof(q1)),
		    config_quote(cfg->mountpoint, q2, sizeof(q2)));
	else if (path_inside(cfg->state_path, cfg->mountpoint))
		config_fail(c, l_state > l_mnt ? l_state : l_mnt, -EINVAL,
			    "[state] path `%s' is inside [mount] mountpoint `%s'; expected a path "
			    "outside the mount",
			    config_quote(cfg->state_path, q1, sizeof(q1)),
			    config_quote(cfg->mountpoint, q2, sizeof(q2)));
	else {
		char msg[CONFIG_ERR_MAX];
		unsigned line = 0;

		if (config_probe_types_finish(c, &line, msg, sizeof(msg)) < 0 ||
		    config_discover_finish(cfg, l_mnt, &line, msg, sizeof(msg)) < 0)
			config_fail(c, line, -EINVAL, "%s", msg);
	}
}
