/* SPDX-License-Identifier: MIT */
/*
 * plugfs-test-csi-probe: runs probe_csi_many once, the way the prober does,
 * and prints one line per socket, for test_csi_probe.sh:
 *
 *   plugfs-test-csi-probe TIMEOUT_MS PATH[=EXPECTED_NAME]...
 *   -> "<i> ok|dead <took_ms> <error>"   (error "-" when ok)
 *
 * and probe_csi_identify, discovery's identification:
 *
 *   plugfs-test-csi-probe --identify TIMEOUT_MS PATH...
 *   -> "<i> ok|dead <took_ms> name=<name> version=<version>
 *       controller=0|1 node=0|1 <error>"
 *
 * Exit 0 when the probes ran (whatever their outcome), 2 on bad usage,
 * 1 when probe_csi_many itself failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

static int identify(int argc, char *argv[])
{
	struct probe_identity *id = NULL;
	size_t n = argc > 3 ? (size_t)argc - 3 : 0;
	char *end = NULL;
	unsigned long timeout;
	int rc = 1;

	if (argc < 4 || (timeout = strtoul(argv[2], &end, 10)) == 0 || *end) {
		fprintf(stderr, "usage: %s --identify TIMEOUT_MS PATH...\n", argv[0]);
		return 2;
	}
	id = calloc(n, sizeof(*id));
	if (!id || probe_global_init() != 0)
		goto out;
	if (probe_csi_identify((const char *const *)argv + 3, n, (unsigned)timeout, id, NULL) != 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		printf("%zu %s %u name=%s version=%s controller=%d node=%d %s\n", i,
		       id[i].res.ok ? "ok" : "dead", id[i].res.took_ms, id[i].name, id[i].version,
		       id[i].controller, id[i].node, id[i].res.ok ? "-" : id[i].res.error);
	probe_global_cleanup();
	rc = 0;
out:
	free(id);
	return rc;
}

int main(int argc, char *argv[])
{
	const char **paths = NULL, **names = NULL;
	struct probe_result *res = NULL;
	size_t n = argc > 2 ? (size_t)argc - 2 : 0;
	char *end = NULL;
	unsigned long timeout;
	int rc = 1;

	if (argc > 1 && strcmp(argv[1], "--identify") == 0)
		return identify(argc, argv);
	if (argc < 3 || (timeout = strtoul(argv[1], &end, 10)) == 0 || *end) {
		fprintf(stderr, "usage: %s TIMEOUT_MS PATH[=EXPECTED_NAME]...\n", argv[0]);
		return 2;
	}
	paths = calloc(n, sizeof(*paths));
	names = calloc(n, sizeof(*names));
	res = calloc(n, sizeof(*res));
	if (!paths || !names || !res || probe_global_init() != 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char *eq = strchr(argv[i + 2], '=');

		if (eq) {
			*eq = '\0';
			names[i] = eq + 1;
		}
		paths[i] = argv[i + 2];
	}
	if (probe_csi_many(paths, names, n, (unsigned)timeout, res) != 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		printf("%zu %s %u %s\n", i, res[i].ok ? "ok" : "dead", res[i].took_ms,
		       res[i].ok ? "-" : res[i].error);
	probe_global_cleanup();
	rc = 0;
out:
	free(paths);
	free(names);
	free(res);
	return rc;
}
