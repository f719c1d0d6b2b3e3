/*
 * http.c - the lighthouse's HTTP side (see lighthouse.h): an HTML
 * dashboard, /status.json, /metrics in the Prometheus text format and
 * POST /replica/<id>/kill, served by libevent's evhttp on the lighthouse's
 * event loop.  Every page is built from one fti_lighthouse_snapshot.
 *
 * With a token (the job secret): the kill needs "Authorization: Bearer
 * <token>" (a header only: never a query string, cookie or form field, so
 * another web page cannot make a browser send it), and the dashboard and
 * /status.json show the groups' addresses only to a request that carries
 * it (a browser's plain page load does not: it sees the page without
 * them).  /metrics holds no address of a group or rank and stays open for
 * scrapers; it names the job's lighthouses (the leader, the standbys),
 * whose addresses every rank is given anyway (FTMPI_LIGHTHOUSE) and which
 * a standby names to any caller.  With or
 * without a token, a POST whose Origin header names another site is
 * refused (CSRF).
 */
#include "lighthouse/lighthouse.h"
#include "lighthouse/recoveries.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lighthouse/dashboard.h"
#include "lighthouse/http_guard.h"
#include "lighthouse/obs_pages.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "base/sizes.h"
#include "base/util.h"

#define HTTP_MAX_BODY 4096
#define HTTP_MAX_HEADERS 16384
#define HTTP_TIMEOUT_S 10
/* connections served at once, from one address at most, how long one may
 * take to send a whole request, and to stay open in all (http_guard.h:
 * evhttp's timeout restarts with every byte) */
#define HTTP_MAX_CONNS 64
#define HTTP_PER_ADDR 8
#define HTTP_HEAD_MS 5000
#define HTTP_DEADLINE_MS 15000
#define KILL_PREFIX "/replica/"
#define KILL_SUFFIX "/kill"

struct fti_lh_http {
    struct evhttp *http;
    fti_http_guard_h guard;
    fti_lighthouse_h lh;
    char token[FTI_TOKEN_SIZE];
    char addr[FTI_ADDRESS_SIZE];
};

/* ---- escaping ----------------------------------------------------------- */

/* ---- replies -------------------------------------------------------------- */

static void reply(struct evhttp_request *req, int code, const char *reason, const char *ctype,
                  struct evbuffer *body)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_send_reply(req, code, reason, body);
}

static void reply_text(struct evhttp_request *req, int code, const char *reason,
                       const char *text)
{
    struct evbuffer *b = evbuffer_new();
    if (b == NULL) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add_printf(b, "%s\n", text);
    reply(req, code, reason, "text/plain; charset=utf-8", b);
    evbuffer_free(b);
}

/* ---- pages ------------------------------------------------------------------ */

/* Replaces every member's address and every rank's with "" (a request
 * without the token). */
static void hide_addresses(fti_lh_snapshot_t *s)
{
    for (size_t i = 0; i < s->n_members; i++)
        s->members[i].address[0] = '\0';
    for (size_t g = 0; s->recov != NULL && g < s->recov->n_groups; g++)
        for (size_t r = 0; r < s->recov->groups[g].n_ranks; r++)
            s->recov->groups[g].ranks[r].address[0] = '\0';
}

/* The ranks of group id as its last heartbeat reported them (NULL: none). */
static const fti_lh_recov_group_t *ranks_of(const fti_lh_snapshot_t *s, const char *id)
{
    for (size_t g = 0; s->recov != NULL && g < s->recov->n_groups; g++)
        if (strcmp(s->recov->groups[g].replica_id, id) == 0)
            return s->recov->groups[g].n_ranks ? &s->recov->groups[g] : NULL;
    return NULL;
}

/* A group's state on the dashboard: a finalized group is done, not lost. */
static const char *member_state(const fti_lh_member_view_t *m)
{
    if (m->killed)
        return "killed";
    if (m->finished)
        return "finished";
    if (m->dead)
        return "dead";
    return m->healthy ? "healthy" : "unhealthy";
}

/* Leader or standby (etcd), when this lighthouse is one of several. */
static void page_role(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    if (s->role == FTI_LH_ROLE_ALONE)
        return;
    evbuffer_add_printf(b, "<p>Lighthouse <b id=\"role\">%s</b> (etcd)%s",
                        s->role == FTI_LH_ROLE_LEADER ? "leader" : "standby",
                        s->role == FTI_LH_ROLE_LEADER ? "" : "; the leader is ");
    if (s->role == FTI_LH_ROLE_STANDBY)
        fti_lh_html_escape(b, s->leader[0] ? s->leader : "not known (an election runs)");
    evbuffer_add_printf(b, ".</p>\n");
    if (s->n_lighthouses == 0)
        return;
    evbuffer_add_printf(b, "<p>The job's lighthouses:</p>\n<ul id=\"lighthouses\">\n");
    for (size_t i = 0; i < s->n_lighthouses; i++) {
        evbuffer_add_printf(b, "<li>");
        fti_lh_html_escape(b, s->lighthouses[i].address);
        evbuffer_add_printf(b, " %s</li>\n", s->lighthouses[i].leader ? "leader" : "standby");
    }
    evbuffer_add_printf(b, "</ul>\n");
}

/* A Prometheus label value: \\ \" \n escaped. */
static void label_value(struct evbuffer *b, const char *v)
{
    for (const char *c = v; *c; c++)
        evbuffer_add_printf(b, *c == '\\' || *c == '"' ? "\\%c" : *c == '\n' ? "\\n" : "%c", *c);
}

/* The dashboard's address cell of member m: its manager's address, then
 * each rank's advertised one; "hidden" without the token. */
static void address_cell(struct evbuffer *b, const fti_lh_snapshot_t *s,
                         const fti_lh_member_view_t *m, bool hidden)
{
    if (hidden) {
        evbuffer_add_printf(b, "(hidden: needs the token)");
        return;
    }
    fti_lh_html_escape(b, m->address);
    const fti_lh_recov_group_t *rk = ranks_of(s, m->replica_id);
    for (size_t r = 0; rk != NULL && r < rk->n_ranks; r++) {
        evbuffer_add_printf(b, "%s rank %zu ", r ? "," : "<br><small class=\"ranks\">", r);
        fti_lh_html_escape(b, rk->ranks[r].address);
    }
    if (rk != NULL)
        evbuffer_add_printf(b, "</small>");
}

/* has_addr[i]: member i had an address before hide_addresses (its kill
 * button is shown); NULL = look at the addresses. */
static void page_dashboard(struct evbuffer *b, const fti_lh_snapshot_t *s, const bool *has_addr)
{
    size_t in_quorum = 0;
    for (size_t i = 0; i < s->n_members; i++)
        in_quorum += s->members[i].in_quorum;
    evbuffer_add_printf(
        b,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"refresh\" content=\"2\">\n"
        "<title>ftmpi lighthouse</title>\n<style>\n"
        "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}\n"
        "td,th{border:1px solid #bbb;padding:.2em .6em;text-align:left}\n"
        "tr.behind td.step{color:#b00;font-weight:bold}tr.out{color:#888}\n"
        ".reason{background:#f4f4f4;padding:.4em;font-family:monospace}\n"
        "</style></head><body>\n<h1>ftmpi lighthouse</h1>\n");
    if (s->quorum_id >= 0) {
        time_t secs = (time_t)(s->quorum_created_ms / 1000);
        struct tm tm;
        char when[64] = "?";
        if (gmtime_r(&secs, &tm))
            strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
        evbuffer_add_printf(b,
                            "<p>Quorum <b id=\"quorum-id\">%" PRId64 "</b>: %zu members, "
                            "max step %" PRId64 ", min replicas %d, issued %s.%03d UTC.</p>\n",
                            s->quorum_id, in_quorum, s->max_step, s->min_replicas, when,
                            (int)(s->quorum_created_ms % 1000));
    } else
        evbuffer_add_printf(b, "<p>No quorum yet (min replicas %d).</p>\n", s->min_replicas);
    page_role(b, s);
    evbuffer_add_printf(b, "<p>Next quorum: <span class=\"reason\">");
    fti_lh_html_escape(b, s->waiting_reason);
    evbuffer_add_printf(b, "</span></p>\n<table>\n<tr><th>replica</th><th>in quorum</th>"
                           "<th>step</th><th>address</th><th>world size</th>"
                           "<th>heartbeat age</th><th>state</th><th></th></tr>\n");
    for (size_t i = 0; i < s->n_members; i++) {
        const fti_lh_member_view_t *m = &s->members[i];
        evbuffer_add_printf(b, "<tr class=\"%s\"><td>",
                            m->behind ? "behind" : m->in_quorum ? "member" : "out");
        fti_lh_html_escape(b, m->replica_id);
        evbuffer_add_printf(b, "</td><td>%s</td><td class=\"step\">", m->in_quorum ? "yes" : "no");
        if (m->step >= 0)
            evbuffer_add_printf(b, "%" PRId64 "%s", m->step, m->behind ? " (behind)" : "");
        evbuffer_add_printf(b, "</td><td>");
        address_cell(b, s, m, has_addr != NULL);
        evbuffer_add_printf(b, "</td><td>%" PRIu64 "</td><td>", m->world_size);
        if (m->heartbeat_age_ms >= 0)
            evbuffer_add_printf(b, "%.1f s", (double)m->heartbeat_age_ms / 1000.0);
        else
            evbuffer_add_printf(b, "never");
        evbuffer_add_printf(b, "</td><td>%s%s</td><td>",
                            member_state(m),
                            m->waiting ? ", waiting" : "");
        if (has_addr ? has_addr[i] : m->address[0] != '\0') {
            evbuffer_add_printf(b, "<button data-id=\"");
            fti_lh_html_escape(b, m->replica_id);
            evbuffer_add_printf(b, "\" onclick=\"killReplica(this)\">kill</button>");
        }
        evbuffer_add_printf(b, "</td></tr>\n");
    }
    evbuffer_add_printf(b, "</table>\n");
    fti_lh_obs_html(b, s);
    fti_lh_dash_html(b, s);
    evbuffer_add_printf(
        b,
        "<p>Quorums issued %" PRIu64 ", quorum requests %" PRIu64
        ", heartbeats %" PRIu64 ", rejected frames %" PRIu64 ".</p>\n"
        "<p><a href=\"/status.json\">status.json</a> &middot; <a href=\"/metrics\">metrics</a></p>\n"
        "<script>\nfunction killReplica(btn){\n"
        "  var id=btn.getAttribute('data-id');\n"
        "  if(!confirm('Kill replica group '+id+'?'))return;\n"
        "  var t=sessionStorage.getItem('ftmpiToken');\n"
        "  if(t===null){t=prompt('Token (empty if none):')||'';sessionStorage.setItem('ftmpiToken',t);}\n"
        "  var h=t?{'Authorization':'Bearer '+t}:{};\n"
        "  fetch('/replica/'+encodeURIComponent(id)+'/kill',{method:'POST',headers:h})\n"
        "   .then(function(r){if(r.status==401)sessionStorage.removeItem('ftmpiToken');"
        "return r.text().then(function(x){alert(r.status+' '+x);});});\n"
        "}\n</script>\n</body></html>\n",
        s->quorums_issued, s->quorum_requests, s->heartbeats, s->rejected_frames);
}

static void page_status_json(struct evbuffer *b, const fti_lh_snapshot_t *s, bool hidden)
{
    evbuffer_add_printf(b,
                        "{\"quorum_id\":%" PRId64 ",\"quorum_created_ms\":%" PRId64
                        ",\"max_step\":%" PRId64 ",\"min_replicas\":%d,\"waiting_reason\":",
                        s->quorum_id, s->quorum_created_ms, s->max_step, s->min_replicas);
    fti_lh_json_string(b, s->waiting_reason);
    evbuffer_add_printf(b, ",\"addresses_hidden\":%s", hidden ? "true" : "false");
    evbuffer_add_printf(b, ",\"role\":\"%s\",\"leader\":",
                        s->role == FTI_LH_ROLE_ALONE    ? "alone"
                        : s->role == FTI_LH_ROLE_LEADER ? "leader"
                                                        : "standby");
    fti_lh_json_string(b, s->leader);
    evbuffer_add_printf(b, ",\"lighthouses\":[");
    for (size_t i = 0; i < s->n_lighthouses; i++) {
        evbuffer_add_printf(b, "%s{\"address\":", i ? "," : "");
        fti_lh_json_string(b, s->lighthouses[i].address);
        evbuffer_add_printf(b, ",\"role\":\"%s\"}",
                            s->lighthouses[i].leader ? "leader" : "standby");
    }
    evbuffer_add_printf(b, "]");
    evbuffer_add_printf(b,
                        ",\"counters\":{\"quorums_issued\":%" PRIu64 ",\"quorum_requests\":%" PRIu64
                        ",\"heartbeats\":%" PRIu64 ",\"rejected_frames\":%" PRIu64 "}",
                        s->quorums_issued, s->quorum_requests, s->heartbeats, s->rejected_frames);
    evbuffer_add_printf(b, ",\"members\":[");
    for (size_t i = 0; i < s->n_members; i++) {
        const fti_lh_member_view_t *m = &s->members[i];
        evbuffer_add_printf(b, "%s\n{\"replica_id\":", i ? "," : "");
        fti_lh_json_string(b, m->replica_id);
        evbuffer_add_printf(b, ",\"address\":");
        fti_lh_json_string(b, m->address);
        evbuffer_add_printf(b,
                            ",\"step\":%" PRId64 ",\"world_size\":%" PRIu64
                            ",\"heartbeat_age_ms\":%" PRId64
                            ",\"in_quorum\":%s,\"behind\":%s,\"waiting\":%s,\"healthy\":%s"
                            ",\"killed\":%s,\"finished\":%s",
                            m->step, m->world_size, m->heartbeat_age_ms,
                            m->in_quorum ? "true" : "false", m->behind ? "true" : "false",
                            m->waiting ? "true" : "false", m->healthy ? "true" : "false",
                            m->killed ? "true" : "false", m->finished ? "true" : "false");
        /* each rank's advertised address, as its group last reported it */
        const fti_lh_recov_group_t *rk = ranks_of(s, m->replica_id);
        evbuffer_add_printf(b, ",\"ranks\":[");
        for (size_t r = 0; rk != NULL && r < rk->n_ranks; r++) {
            evbuffer_add_printf(b, "%s{\"group_rank\":%zu,\"address\":", r ? "," : "", r);
            fti_lh_json_string(b, rk->ranks[r].address);
            evbuffer_add_printf(b, "}");
        }
        evbuffer_add_printf(b, "]}");
    }
    evbuffer_add_printf(b, "]");
    fti_lh_obs_json(b, s);
    fti_lh_dash_json(b, s);
    evbuffer_add_printf(b, "}\n");
}

static void metric_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The roles among the job's lighthouses (etcd): leader, the leader a
 * standby names, every lighthouse alive with its role. */
static void metrics_roles(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    metric_head(b, "ftmpi_lighthouse_leader", "gauge",
                "1 when this lighthouse leads (or is the job's only one), 0 for a standby.");
    evbuffer_add_printf(b, "ftmpi_lighthouse_leader %d\n", s->role != FTI_LH_ROLE_STANDBY);
    if (s->role == FTI_LH_ROLE_STANDBY && s->leader[0]) {
        metric_head(b, "ftmpi_lighthouse_leader_info", "gauge",
                    "The leader a standby names to the groups (etcd election).");
        evbuffer_add_printf(b, "ftmpi_lighthouse_leader_info{leader=\"");
        label_value(b, s->leader);
        evbuffer_add_printf(b, "\"} 1\n");
    }
    if (s->n_lighthouses > 0)
        metric_head(b, "ftmpi_lighthouse_members_info", "gauge",
                    "The job's lighthouses alive in etcd, each with its role (1 each).");
    for (size_t i = 0; i < s->n_lighthouses; i++) {
        evbuffer_add_printf(b, "ftmpi_lighthouse_members_info{address=\"");
        label_value(b, s->lighthouses[i].address);
        evbuffer_add_printf(b, "\",role=\"%s\"} 1\n",
                            s->lighthouses[i].leader ? "leader" : "standby");
    }
}

static void page_metrics(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    size_t members = 0, healthy = 0, waiting = 0;
    for (size_t i = 0; i < s->n_members; i++) {
        members += s->members[i].in_quorum;
        healthy += s->members[i].healthy;
        waiting += s->members[i].waiting;
    }
    metric_head(b, "ftmpi_lighthouse_quorums_total", "counter", "Quorums issued.");
    evbuffer_add_printf(b, "ftmpi_lighthouse_quorums_total %" PRIu64 "\n", s->quorums_issued);
    metric_head(b, "ftmpi_lighthouse_quorum_id", "gauge",
                "Id of the current quorum (-1 before the first).");
    evbuffer_add_printf(b, "ftmpi_lighthouse_quorum_id %" PRId64 "\n", s->quorum_id);
    metrics_roles(b, s);
    metric_head(b, "ftmpi_lighthouse_members", "gauge", "Replica groups in the current quorum.");
    evbuffer_add_printf(b, "ftmpi_lighthouse_members %zu\n", members);
    metric_head(b, "ftmpi_lighthouse_groups_healthy", "gauge",
                "Replica groups whose last heartbeat is within the heartbeat timeout.");
    evbuffer_add_printf(b, "ftmpi_lighthouse_groups_healthy %zu\n", healthy);
    metric_head(b, "ftmpi_lighthouse_groups_waiting", "gauge",
                "Replica groups waiting for a quorum.");
    evbuffer_add_printf(b, "ftmpi_lighthouse_groups_waiting %zu\n", waiting);
    metric_head(b, "ftmpi_lighthouse_max_step", "gauge",
                "Highest step among the members of the current quorum (-1 before the first).");
    evbuffer_add_printf(b, "ftmpi_lighthouse_max_step %" PRId64 "\n", s->max_step);
    metric_head(b, "ftmpi_lighthouse_heartbeats_total", "counter", "Heartbeat requests received.");
    evbuffer_add_printf(b, "ftmpi_lighthouse_heartbeats_total %" PRIu64 "\n", s->heartbeats);
    metric_head(b, "ftmpi_lighthouse_quorum_requests_total", "counter",
                "Quorum requests received.");
    evbuffer_add_printf(b, "ftmpi_lighthouse_quorum_requests_total %" PRIu64 "\n",
                        s->quorum_requests);
    metric_head(b, "ftmpi_lighthouse_rejected_frames_total", "counter",
                "RPC frames rejected, by reason.");
    const struct {
        const char *reason;
        uint64_t n;
    } rej[] = {{"garbage", s->rejected_garbage},
               {"oversize", s->rejected_oversize},
               {"truncated", s->rejected_truncated},
               {"unknown_method", s->rejected_unknown},
               {"decode", s->rejected_decode},
               {"auth", s->rejected_auth}};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(rej); i++)
        evbuffer_add_printf(b, "ftmpi_lighthouse_rejected_frames_total{reason=\"%s\"} %" PRIu64 "\n",
                            rej[i].reason, rej[i].n);
    metric_head(b, "ftmpi_lighthouse_quorum_formation_seconds", "histogram",
                "Time from the first quorum request of a round to the quorum.");
    uint64_t cum = 0;
    for (size_t i = 0; i < FTI_LH_HIST_BUCKETS; i++) {
        cum += s->hist[i];
        if (i < FTI_LH_HIST_BUCKETS - 1)
            evbuffer_add_printf(b,
                                "ftmpi_lighthouse_quorum_formation_seconds_bucket{le=\"%g\"} "
                                "%" PRIu64 "\n",
                                fti_lh_hist_bounds_ms[i] / 1000.0, cum);
        else
            evbuffer_add_printf(b,
                                "ftmpi_lighthouse_quorum_formation_seconds_bucket{le=\"+Inf\"} "
                                "%" PRIu64 "\n",
                                cum);
    }
    evbuffer_add_printf(b, "ftmpi_lighthouse_quorum_formation_seconds_sum %.6f\n",
                        s->hist_sum_ms / 1000.0);
    evbuffer_add_printf(b, "ftmpi_lighthouse_quorum_formation_seconds_count %" PRIu64 "\n",
                        s->hist_count);
    fti_lh_dash_metrics(b, s);
    fti_lh_obs_metrics(b, s);
}

/* ---- kill ------------------------------------------------------------------ */

/* Constant-time comparison of a presented token with the configured one. */
static bool token_ok(const char *want, const char *got)
{
    size_t lw = strlen(want), lg = strlen(got);
    unsigned char diff = lw != lg;
    for (size_t i = 0; i < lw; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < lg ? got[i] : 0);
    return diff == 0;
}

/* Whether req carries the token in its Authorization header (always true
 * without a token). */
static bool authorized(const struct fti_lh_http *h, struct evhttp_request *req)
{
    if (!h->token[0])
        return true;
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    return auth != NULL && strncmp(auth, "Bearer ", 7) == 0 && token_ok(h->token, auth + 7);
}

/* Whether a state-changing request may come from where it says: no Origin
 * header (curl, scripts), or one naming this very server (the dashboard's
 * own button).  A page of another site that makes the browser POST here
 * always sends its own Origin. */
static bool same_origin(struct evhttp_request *req)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *origin = evhttp_find_header(in, "Origin"), *host = evhttp_find_header(in, "Host");
    char want[FTI_ADDRESS_SIZE + 16];
    if (origin == NULL)
        return true;
    if (host == NULL)
        return false;
    snprintf(want, sizeof(want), "http://%s", host);
    return strcmp(origin, want) == 0;
}

static void log_refused(struct evhttp_request *req, const char *why)
{
    char *peer = NULL;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), &peer, &port);
    FTI_WARN("http: kill of a replica refused: %s (from %s:%u)", why, peer ? peer : "?",
             (unsigned)port);
}

static void handle_kill(struct fti_lh_http *h, struct evhttp_request *req, const char *enc_id,
                        size_t enc_len)
{
    if (!same_origin(req)) {
        log_refused(req, "a cross-site request (its Origin is another site)");
        reply_text(req, 403, "Forbidden", "cross-site request refused");
        return;
    }
    if (!authorized(h, req)) {
        log_refused(req, "without the right token");
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
        reply_text(req, 401, "Unauthorized", "a valid 'Authorization: Bearer <token>' is needed");
        return;
    }
    char enc[256], msg[256] = "killed from the lighthouse dashboard";
    if (enc_len == 0 || enc_len >= sizeof(enc)) {
        reply_text(req, 404, "Not Found", "no such replica group");
        return;
    }
    memcpy(enc, enc_id, enc_len);
    enc[enc_len] = '\0';
    char *id = evhttp_uridecode(enc, 0, NULL);
    if (id == NULL) {
        reply_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t blen = evbuffer_get_length(in);
    if (blen > 0) {
        if (blen >= sizeof(msg))
            blen = sizeof(msg) - 1;
        evbuffer_copyout(in, msg, blen);
        msg[blen] = '\0';
        for (size_t i = 0; i < blen; i++) /* keep the message printable */
            if ((unsigned char)msg[i] < 0x20)
                msg[i] = ' ';
    }
    int rc = fti_lighthouse_kill(h->lh, id, msg);
    if (rc == FT_SUCCESS) {
        char text[320];
        snprintf(text, sizeof(text), "kill sent to %s", id);
        reply_text(req, 200, "OK", text);
    } else if (rc == FT_ERR_NOT_FOUND) {
        reply_text(req, 404, "Not Found", "no such replica group (or no manager address known)");
    } else {
        reply_text(req, 500, "Internal Server Error", FT_Error_string(rc));
    }
    free(id);
}

/* ---- dispatch ---------------------------------------------------------------- */

static void handle(struct evhttp_request *req, void *arg)
{
    struct fti_lh_http *h = arg;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    fti_http_guard_request(h->guard,
                           evhttp_connection_get_bufferevent(evhttp_request_get_connection(req)));
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (path == NULL || *path == '\0')
        path = "/";

    size_t plen = strlen(path), pre = strlen(KILL_PREFIX), suf = strlen(KILL_SUFFIX);
    if (plen > pre + suf && strncmp(path, KILL_PREFIX, pre) == 0 &&
        strcmp(path + plen - suf, KILL_SUFFIX) == 0 &&
        memchr(path + pre, '/', plen - pre - suf) == NULL) {
        if (cmd != EVHTTP_REQ_POST) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
            reply_text(req, 405, "Method Not Allowed", "use POST");
            return;
        }
        handle_kill(h, req, path + pre, plen - pre - suf);
        return;
    }

    enum { P_NONE, P_DASH, P_JSON, P_METRICS } page = P_NONE;
    if (strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0)
        page = P_DASH;
    else if (strcmp(path, "/status.json") == 0)
        page = P_JSON;
    else if (strcmp(path, "/metrics") == 0)
        page = P_METRICS;
    if (page == P_NONE) {
        reply_text(req, 404, "Not Found", "not found");
        return;
    }
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        reply_text(req, 405, "Method Not Allowed", "use GET");
        return;
    }

    fti_lh_snapshot_t *s = NULL;
    struct evbuffer *b = evbuffer_new();
    if (b == NULL || fti_lighthouse_snapshot(h->lh, &s) != FT_SUCCESS) {
        if (b)
            evbuffer_free(b);
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    const char *ctype;
    bool hidden = page != P_METRICS && !authorized(h, req), *has_addr = NULL;
    if (hidden) {
        has_addr = calloc(s->n_members ? s->n_members : 1, sizeof(*has_addr));
        for (size_t i = 0; has_addr != NULL && i < s->n_members; i++)
            has_addr[i] = s->members[i].address[0] != '\0';
        hide_addresses(s);
    }
    switch (page) {
    case P_DASH:
        page_dashboard(b, s, has_addr);
        ctype = "text/html; charset=utf-8";
        break;
    case P_JSON:
        page_status_json(b, s, hidden);
        ctype = "application/json";
        break;
    default:
        page_metrics(b, s);
        ctype = "text/plain; version=0.0.4; charset=utf-8";
        break;
    }
    free(has_addr);
    fti_lh_snapshot_free(s);
    if (cmd == EVHTTP_REQ_HEAD)
        evbuffer_drain(b, evbuffer_get_length(b)); /* headers only */
    reply(req, 200, "OK", ctype, b);
    evbuffer_free(b);
}

/* ---- create / destroy ------------------------------------------------------ */

int fti_lh_http_create(struct event_base *base, fti_lighthouse_h lh, const char *bind,
                       const char *token, fti_lh_http_h *http_p)
{
    int fd = -1, rc;
    if (base == NULL || lh == NULL || bind == NULL || http_p == NULL)
        return FT_ERR_ARG;
    struct fti_lh_http *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return FT_ERR_NO_MEMORY;
    h->lh = lh;
    if (fti_strlcpy(h->token, token ? token : "", sizeof(h->token)) != 0) {
        free(h);
        return FT_ERR_ARG;
    }
    if ((rc = fti_tcp_listen(bind, 128, &fd)) != FT_SUCCESS ||
        (rc = fti_sock_name(fd, h->addr, sizeof(h->addr))) != FT_SUCCESS) {
        FTI_ERROR("http: cannot listen on %s: %s", bind, FT_Error_string(rc));
        if (fd >= 0)
            close(fd);
        free(h);
        return rc;
    }
    h->http = evhttp_new(base);
    struct evhttp_bound_socket *bound =
        h->http ? evhttp_accept_socket_with_handle(h->http, fd) : NULL;
    const fti_http_guard_opts_t go = {HTTP_MAX_CONNS, HTTP_PER_ADDR, HTTP_HEAD_MS,
                                      HTTP_DEADLINE_MS};
    if (bound == NULL || fti_http_guard_create(base, h->http, bound, &go, &h->guard) != FT_SUCCESS) {
        FTI_ERROR("http: evhttp setup failed on %s", bind);
        if (h->http)
            evhttp_free(h->http);
        if (bound == NULL)
            close(fd);
        free(h);
        return FT_ERR_SYSTEM;
    }
    /* every method reaches handle(), which answers 405 itself */
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                            EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_max_body_size(h->http, HTTP_MAX_BODY);
    evhttp_set_max_headers_size(h->http, HTTP_MAX_HEADERS);
    evhttp_set_timeout(h->http, HTTP_TIMEOUT_S);
    evhttp_set_gencb(h->http, handle, h);
    FTI_INFO("http dashboard on http://%s/%s", h->addr,
             h->token[0] ? " (the kill and the groups' addresses need the token)" : "");
    *http_p = h;
    return FT_SUCCESS;
}

void fti_lh_http_destroy(fti_lh_http_h h)
{
    if (h == NULL)
        return;
    evhttp_free(h->http);
    fti_http_guard_destroy(h->guard);
    free(h);
}

const char *fti_lh_http_address(fti_lh_http_h h)
{
    return h->addr;
}
