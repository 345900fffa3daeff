/* SPDX-License-Identifier: MIT */
/*
 * The agent's service names (agent/service.c): the script a command runs,
 * what Pyroscope takes in a name, and which templates are refused.
 */
#include "agent/service.h"
#include "unit.h"

static const char *script(const char *cmd)
{
	static char out[128];

	service_script(cmd, out, sizeof(out));
	return out;
}

static const char *sanitized(const char *in)
{
	static char out[128];

	snprintf(out, sizeof(out), "%s", in);
	service_sanitize(out);
	return out;
}

int main(void)
{
	CHECK_EQ_STR(script("python3 /srv/app.py --port 80"), "app");
	CHECK_EQ_STR(script("/usr/bin/python3.11 -u -X dev -W ignore worker.py"), "worker");
	CHECK_EQ_STR(script("python3 -m pkg.mod arg"), "pkg.mod");
	CHECK_EQ_STR(script("python3 -um celery.bin worker"), "celery.bin");   /* clustered: -u -m */
	CHECK_EQ_STR(script("python3 -mhttp.server 8000"), "http.server");
	CHECK_EQ_STR(script("python3 -Wignore -X dev job.py"), "job");
	CHECK_EQ_STR(script("python3 -c import time"), "");
	CHECK_EQ_STR(script("python3 -uc import time"), "");
	CHECK_EQ_STR(script("python3 --check-hash-based-pycs never run.py"), "run");
	CHECK_EQ_STR(script("python3"), "");
	CHECK_EQ_STR(script("python3 -"), "");
	CHECK_EQ_STR(script("python3 tool"), "tool");
	CHECK_EQ_STR(script("python3 .py"), ".py");                   /* nothing before .py: kept */
	CHECK_EQ_STR(script(""), "");

	CHECK_EQ_STR(sanitized("shop/cart-api_v2.1"), "shop/cart-api_v2.1");
	CHECK_EQ_STR(sanitized("my app+x@y:z"), "my_app_x_y_z");
	CHECK_EQ_STR(sanitized(""), "unknown");
	CHECK_EQ_STR(sanitized("caf\xc3\xa9"), "caf__");

	CHECK(services_bad_placeholder("{namespace}/{container}") == NULL);
	CHECK(services_bad_placeholder("svc-{pid}-{comm}-{script}-{pod}-{container_id}") == NULL);
	CHECK(services_bad_placeholder("plain") == NULL);
	CHECK_EQ_STR(services_bad_placeholder("{name}"), "{name}");
	CHECK_EQ_STR(services_bad_placeholder("a-{pid"), "{pid");
	CHECK_EQ_STR(services_bad_placeholder("{pod}{}"), "{}");
	return unit_done("test_service");
}
