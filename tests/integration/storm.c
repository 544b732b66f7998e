/* SPDX-License-Identifier: MIT */
/*
 * plugfs-test-storm SOCKET SOCKDIR CLIENTS OPS SEED: CLIENTS threads, each on
 * its own control connection, each sending OPS register/deregister requests
 * (chosen by a seeded generator) on a few overlapping plugins and allocs, one
 * request at a time.  Every request is valid, so every answer must be ok.
 * Prints a summary; exit 0 when no client saw an error, 1 otherwise.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"

static const char *sock_path, *sock_dir;
static int n_ops;
static unsigned seed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long n_ok, n_err;

static json_t *make_request(unsigned *rs, int client)
{
	static const char *const types[] = {"csi-controller", "csi-node"};
	char name[16], alloc[32], path[512];
	int r = (int)(rand_r(rs) % 100);
	int shared = rand_r(rs) % 2;

	snprintf(name, sizeof(name), "p%u", rand_r(rs) % 4);
	if (shared)
		snprintf(alloc, sizeof(alloc), "s%u", rand_r(rs) % 4);
	else
		snprintf(alloc, sizeof(alloc), "c%d-a%u", client, rand_r(rs) % 4);
	if (r < 55) {
		int which = (int)(rand_r(rs) % 3);
		json_t *t = json_array();

		if (which != 1)
			json_array_append_new(t, json_string(types[0]));
		if (which != 0)
			json_array_append_new(t, json_string(types[1]));
		/* Shared allocs get a socket that differs by client: updates. */
		snprintf(path, sizeof(path), "%s/%s-%d.sock", sock_dir, alloc,
			 shared ? client % 2 : 0);
		return json_pack("{s:s, s:o, s:s, s:s, s:s}", "op", "register", "types", t, "name",
				 name, "alloc", alloc, "socket", path);
	}
	if (r < 85)
		return json_pack("{s:s, s:s, s:s, s:s}", "op", "deregister", "type",
				 types[rand_r(rs) % 2], "name", name, "alloc", alloc);
	return json_pack("{s:s, s:s}", "op", "deregister", "alloc", alloc);
}

static void *client_main(void *arg)
{
	int client = (int)(long)arg;
	unsigned rs = seed * 7919u + (unsigned)client;
	unsigned long ok = 0, bad = 0;
	char err[512];
	int fd = -1;

	if (control_connect(sock_path, &fd, err, sizeof(err))) {
		fprintf(stderr, "client %d: %s\n", client, err);
		bad = (unsigned long)n_ops;
		goto out;
	}
	for (int i = 0; i < n_ops; i++) {
		json_t *req = make_request(&rs, client), *resp = NULL;
		const char *code = NULL, *msg;

		if (!req || control_send(fd, req, err, sizeof(err)) ||
		    control_recv(fd, &resp, 30000, err, sizeof(err))) {
			fprintf(stderr, "client %d op %d: %s\n", client, i, err);
			json_decref(req);
			bad++;
			break;
		}
		msg = control_response_error(resp, &code);
		if (msg) {
			char *s = json_dumps(req, JSON_COMPACT);

			if (bad < 5)
				fprintf(stderr, "client %d op %d: %s: %s (request %s)\n", client, i,
					code, msg, s ? s : "?");
			free(s);
			bad++;
		} else {
			ok++;
		}
		json_decref(req);
		json_decref(resp);
	}
out:
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&lock);
	n_ok += ok;
	n_err += bad;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char *argv[])
{
	pthread_t th[64];
	int n_clients;

	if (argc != 6) {
		fprintf(stderr, "usage: plugfs-test-storm SOCKET SOCKDIR CLIENTS OPS SEED\n");
		return 2;
	}
	sock_path = argv[1];
	sock_dir = argv[2];
	n_clients = atoi(argv[3]);
	n_ops = atoi(argv[4]);
	seed = (unsigned)atoi(argv[5]);
	if (n_clients < 1 || n_clients > 64 || n_ops < 1) {
		fprintf(stderr, "plugfs-test-storm: 1-64 clients and at least one op\n");
		return 2;
	}
	for (int i = 0; i < n_clients; i++)
		if (pthread_create(&th[i], NULL, client_main, (void *)(long)i) != 0)
			return 1;
	for (int i = 0; i < n_clients; i++)
		pthread_join(th[i], NULL);
	printf("storm: %d clients x %d ops: %lu ok, %lu errors\n", n_clients, n_ops, n_ok, n_err);
	return n_err == 0 && n_ok == (unsigned long)n_clients * (unsigned long)n_ops ? 0 : 1;
}
