/* SPDX-License-Identifier: MIT */
/*
 * The built-in configuration (config_defaults), config_free, and the
 * registry's options of a configuration (config_registry_options).
 */
#include "config.h"
#include "config_internal.h"
#include "config_discover.h"
#include "config_probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

int config_defaults(struct plugfs_config *cfg)
{
	static const char *const types[] = {"csi-controller", "csi-node"};

	memset(cfg, 0, sizeof(*cfg));
	cfg->mountpoint = strdup("/run/plugfs");
	cfg->socket_name = strdup("csi.sock");
	cfg->allow_other = true;
	cfg->cache_timeout = 60;
	cfg->state_path = strdup("/var/lib/plugfs/state.db");
	cfg->synchronous = strdup("full");
	cfg->control_socket = strdup("/run/plugfs.sock");
	cfg->control_group = strdup("");
	cfg->max_clients = 64;
	cfg->idle_timeout = 300;
	cfg->types = calloc(2, sizeof(*cfg->types));
	if (cfg->types) {
		cfg->n_types = 2;
		for (size_t i = 0; i < 2; i++)
			cfg->types[i] = strdup(types[i]);
	}
	cfg->tombstone_ttl = 86400;
	cfg->probe.dflt = (struct reg_probe_settings){
	    .mode = REG_PROBE_CONNECT, .interval_ms = 5000, .timeout_ms = 1000, .failures = 3};
	cfg->log_level = PLOG_INFO;
	cfg->source = strdup("");
	if (!cfg->mountpoint || !cfg->socket_name || !cfg->state_path || !cfg->synchronous ||
	    !cfg->control_socket || !cfg->control_group || !cfg->types || !cfg->types[0] ||
	    !cfg->types[1] || !cfg->source) {
		config_free(cfg);
		return -ENOMEM;
	}
	return 0;
}

void config_free(struct plugfs_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->mountpoint);
	free(cfg->socket_name);
	free(cfg->state_path);
	free(cfg->synchronous);
	free(cfg->control_socket);
	free(cfg->control_group);
	config_free_list(cfg->types, cfg->n_types);
	config_free_list(cfg->socket_roots, cfg->n_socket_roots);
	config_probe_types_free(cfg);
	config_discover_free(cfg);
	free(cfg->source);
	memset(cfg, 0, sizeof(*cfg));
}

void config_registry_options(const struct plugfs_config *cfg, struct registry_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->types = (const char *const *)cfg->types;
	opts->n_types = cfg->n_types;
	opts->socket_roots = (const char *const *)cfg->socket_roots;
	opts->n_socket_roots = cfg->n_socket_roots;
	opts->tombstone_ttl = cfg->tombstone_ttl;
	opts->synchronous = cfg->synchronous;
}
