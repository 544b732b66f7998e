/* SPDX-License-Identifier: MIT */
/* libFuzzer target: one control-protocol request line (ctl_parse_request),
 * and the error answer built from it, as the server does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control_server_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_request req;
	enum ctl_code code = CTL_E_INVALID_ARGUMENT;
	char err[1024];
	char *line = malloc(size + 1);
	size_t len = 0;

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (ctl_parse_request(ctl_ops, line, size, &req, &code, err, sizeof(err)) != 0) {
		json_t *o = ctl_error_response(req.id, code, err);
		char *out = o ? ctl_dump_line(o, &len) : NULL;

		free(out);
		json_decref(o);
	}
	ctl_request_free(&req);
	free(line);
	return 0;
}
