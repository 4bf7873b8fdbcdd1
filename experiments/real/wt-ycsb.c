/*
 * The real half of the WiredTiger pair (experiments/real/pair-wt.sh): a YCSB-like load and
 * update run through WiredTiger's C API, shaped as MongoDB 6.0 shapes a collection (a table
 * keyed by RecordId, an `_id` index keyed by the document key) and driven by a virtual clock,
 * so the run is the same however fast the machine is: request k happens at k / rate seconds;
 * the journal is flushed and synced every --flush-ms of that clock (MongoDB's journal flusher)
 * and a checkpoint is taken every --checkpoint-secs (MongoDB's checkpointer); WiredTiger's own
 * time-based checkpoints are off. Eviction is WiredTiger's own (its threads and triggers).
 *
 * Sources of the table settings (mongodb/mongo r6.0):
 *   src/mongo/db/storage/wiredtiger/wiredtiger_record_store.cpp  generateCreateString
 *   src/mongo/db/storage/wiredtiger/wiredtiger_index.cpp         generateCreateString
 * Block compression is off (snappy is not built here); the pair's model runs with
 * compression = 1.0 to match.
 *
 * Usage: wt-ycsb --home DIR --journal DIR --phase load|run --records N [--ops M]
 *                --value-bytes B --cache-bytes C --rate R --checkpoint-secs S --flush-ms F
 *                --log-file-max BYTES [--first-op K] [--seed S] [--pace-us U]
 * --first-op: the clock's request number at the start (the run continues the load's clock).
 * --pace-us: wall-clock microseconds between requests (default 0: as fast as the engine
 *   takes them). Eviction runs in WiredTiger's own threads on the wall clock, so the pace sets
 *   how far dirty bytes overshoot the eviction target between passes; the driver samples the
 *   cache's dirty bytes every 100 requests and prints their mean.
 * Prints "name<TAB>value" lines: WiredTiger's connection statistics before close, then the
 * bytes the process wrote through write(2)/pwrite(2) before and after close (/proc/self/io
 * wchar: close takes a last checkpoint).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wiredtiger.h>

static void die(const char *what, int ret) {
    fprintf(stderr, "wt-ycsb: %s: %s\n", what, wiredtiger_strerror(ret));
    exit(1);
}
#define CHECK(call, what) do { int r_ = (call); if (r_ != 0) die(what, r_); } while (0)

/* YCSB's key hash (FNV-1a 64), so inserts reach the index in hashed order as YCSB's
 * insertorder=hashed sends them. */
static uint64_t fnv64(uint64_t v) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < 8; i++) {
        h ^= v & 0xff;
        h *= 1099511628211ULL;
        v >>= 8;
    }
    return h;
}

static uint64_t rng_state;
static uint64_t next_rand(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

/* The `_id` index key as MongoDB's KeyString encodes a string: a type byte, the bytes, a
 * terminating zero (25 bytes for YCSB's "user" and 19 digits). */
static size_t index_key(uint64_t record, char *buf) {
    buf[0] = 0x3c;
    int n = snprintf(buf + 1, 64, "user%019" PRIu64, (uint64_t)(fnv64(record) % 10000000000000000000ULL));
    buf[1 + n] = 0;
    return (size_t)n + 2;
}

/* Bytes this process has passed to write(2)/pwrite(2) (/proc/self/io "wchar"). */
static long long wchar(void) {
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    long long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "wchar: %lld", &v) == 1)
            break;
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    const char *home = NULL, *journal = NULL, *phase = NULL;
    uint64_t records = 0, ops = 0, value_bytes = 0, cache_bytes = 0, log_max = 0, first_op = 0, seed = 1;
    double rate = 0, ckpt_secs = 60, flush_ms = 100, pace_us = 0;
    static struct option opts[] = {
        {"home", 1, 0, 'h'}, {"journal", 1, 0, 'j'}, {"phase", 1, 0, 'p'}, {"records", 1, 0, 'n'},
        {"ops", 1, 0, 'o'}, {"value-bytes", 1, 0, 'v'}, {"cache-bytes", 1, 0, 'c'}, {"rate", 1, 0, 'r'},
        {"checkpoint-secs", 1, 0, 'k'}, {"flush-ms", 1, 0, 'f'}, {"log-file-max", 1, 0, 'l'},
        {"first-op", 1, 0, 'a'}, {"seed", 1, 0, 's'}, {"pace-us", 1, 0, 'u'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'h': home = optarg; break;
        case 'j': journal = optarg; break;
        case 'p': phase = optarg; break;
        case 'n': records = strtoull(optarg, NULL, 10); break;
        case 'o': ops = strtoull(optarg, NULL, 10); break;
        case 'v': value_bytes = strtoull(optarg, NULL, 10); break;
        case 'c': cache_bytes = strtoull(optarg, NULL, 10); break;
        case 'r': rate = strtod(optarg, NULL); break;
        case 'k': ckpt_secs = strtod(optarg, NULL); break;
        case 'f': flush_ms = strtod(optarg, NULL); break;
        case 'l': log_max = strtoull(optarg, NULL, 10); break;
        case 'a': first_op = strtoull(optarg, NULL, 10); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'u': pace_us = strtod(optarg, NULL); break;
        default: fprintf(stderr, "wt-ycsb: see the usage at the top of wt-ycsb.c\n"); return 2;
        }
    }
    int load = phase && strcmp(phase, "load") == 0;
    if (!home || !journal || !phase || (!load && strcmp(phase, "run") != 0) || records == 0 || value_bytes == 0 ||
        cache_bytes == 0 || !(rate > 0) || !(ckpt_secs > 0) || !(flush_ms > 0) || log_max == 0) {
        fprintf(stderr, "wt-ycsb: --home, --journal, --phase load|run, --records, --value-bytes, --cache-bytes, --rate, --log-file-max are required (positive)\n");
        return 2;
    }
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    long long at_start = wchar();

    char config[1024];
    /* MongoDB's connection: journal on (a standalone server journals every table), statistics. */
    snprintf(config, sizeof config,
             "create,cache_size=%" PRIu64 ",session_max=100,eviction=(threads_min=4,threads_max=4),"
             "checkpoint=(wait=0),statistics=(fast),log=(enabled=true,remove=true,path=\"%s\",file_max=%" PRIu64 ")",
             cache_bytes, journal, log_max);
    WT_CONNECTION *conn;
    CHECK(wiredtiger_open(home, NULL, config, &conn), "wiredtiger_open");
    WT_SESSION *s;
    CHECK(conn->open_session(conn, NULL, "isolation=snapshot", &s), "open_session");
    if (load) {
        CHECK(s->create(s, "table:collection",
                        "type=file,memory_page_max=10m,split_pct=90,leaf_value_max=64MB,checksum=on,"
                        "block_compressor=,key_format=q,value_format=u,log=(enabled=true)"),
              "create collection");
        CHECK(s->create(s, "table:index",
                        "type=file,internal_page_max=16k,leaf_page_max=16k,checksum=on,prefix_compression=true,"
                        "block_compressor=,key_format=u,value_format=u,log=(enabled=true)"),
              "create index");
    }
    WT_CURSOR *coll, *idx;
    CHECK(s->open_cursor(s, "table:collection", NULL, NULL, &coll), "open collection");
    CHECK(s->open_cursor(s, "table:index", NULL, NULL, &idx), "open index");

    char *value = malloc(value_bytes);
    for (uint64_t i = 0; i < value_bytes; i++)
        value[i] = (char)next_rand();
    uint64_t n = load ? records : ops;
    double next_flush = flush_ms / 1000.0, next_ckpt = ckpt_secs;
    /* The clock's marks already passed before this phase (the run continues the load's). */
    double start = (double)first_op / rate;
    while (next_flush <= start) next_flush += flush_ms / 1000.0;
    while (next_ckpt <= start) next_ckpt += ckpt_secs;
    uint64_t flushes = 0, checkpoints = 0, samples = 0;
    double dirty_sum[3] = {0, 0, 0};
    WT_CURSOR *dirty;
    CHECK(s->open_cursor(s, "statistics:", NULL, NULL, &dirty), "statistics");
    struct timespec pace = {.tv_sec = (time_t)(pace_us / 1e6), .tv_nsec = (long)(pace_us * 1000) % 1000000000L};
    char key[64];
    for (uint64_t k = 0; k < n; k++) {
        if (pace_us > 0)
            nanosleep(&pace, NULL);
        if (k % 100 == 0) {
            const char *d, *pv;
            int64_t v;
            static const int keys[3] = {WT_STAT_CONN_CACHE_BYTES_DIRTY, WT_STAT_CONN_CACHE_BYTES_DIRTY_LEAF, WT_STAT_CONN_CACHE_PAGES_DIRTY};
            for (int i = 0; i < 3; i++) {
                dirty->set_key(dirty, keys[i]);
                CHECK(dirty->search(dirty), "dirty bytes");
                CHECK(dirty->get_value(dirty, &d, &pv, &v), "dirty bytes");
                CHECK(dirty->reset(dirty), "dirty bytes");
                dirty_sum[i] += (double)v;
            }
            samples++;
        }
        double t = (double)(first_op + k) / rate;
        while (next_flush <= t || next_ckpt <= t) {
            if (next_flush <= next_ckpt) {
                CHECK(s->log_flush(s, "sync=on"), "log_flush");
                next_flush += flush_ms / 1000.0;
                flushes++;
            } else {
                CHECK(s->checkpoint(s, NULL), "checkpoint");
                next_ckpt += ckpt_secs;
                checkpoints++;
            }
        }
        uint64_t record = load ? k : next_rand() % records;
        int64_t rid = (int64_t)record + 1;
        size_t klen = index_key(record, key);
        WT_ITEM ik = {.data = key, .size = klen}, iv, dv;
        /* A few bytes of the value change per write, as a document's fields do. */
        memcpy(value, &k, sizeof k);
        dv.data = value;
        dv.size = value_bytes;
        CHECK(s->begin_transaction(s, NULL), "begin_transaction");
        if (load) {
            unsigned char rid_be[8];
            for (int b = 0; b < 8; b++) rid_be[b] = (unsigned char)(rid >> (56 - 8 * b));
            iv.data = rid_be;
            iv.size = 8;
            coll->set_key(coll, rid);
            coll->set_value(coll, &dv);
            CHECK(coll->insert(coll), "insert document");
            idx->set_key(idx, &ik);
            idx->set_value(idx, &iv);
            CHECK(idx->insert(idx), "insert index entry");
        } else {
            /* An update by _id: the index looked up, the document rewritten. */
            idx->set_key(idx, &ik);
            CHECK(idx->search(idx), "search index");
            CHECK(idx->get_value(idx, &iv), "index value");
            int64_t found = 0;
            for (int b = 0; b < 8; b++) found = found << 8 | ((const unsigned char *)iv.data)[b];
            CHECK(idx->reset(idx), "reset index");
            coll->set_key(coll, found);
            coll->set_value(coll, &dv);
            CHECK(coll->update(coll), "update document");
            CHECK(coll->reset(coll), "reset collection");
        }
        CHECK(s->commit_transaction(s, NULL), "commit_transaction");
    }
    /* Statistics go to memory first: what the process writes to stdout must not count. */
    char *report;
    size_t report_len;
    FILE *out = open_memstream(&report, &report_len);
    fprintf(out, "driver: requests\t%" PRIu64 "\n", n);
    fprintf(out, "driver: journal syncs\t%" PRIu64 "\n", flushes);
    fprintf(out, "driver: checkpoints\t%" PRIu64 "\n", checkpoints);
    fprintf(out, "driver: mean dirty bytes\t%.0f\n", samples ? dirty_sum[0] / samples : 0);
    fprintf(out, "driver: mean dirty leaf bytes\t%.0f\n", samples ? dirty_sum[1] / samples : 0);
    fprintf(out, "driver: mean dirty pages\t%.0f\n", samples ? dirty_sum[2] / samples : 0);
    dirty->close(dirty);
    WT_CURSOR *st;
    CHECK(s->open_cursor(s, "statistics:", NULL, NULL, &st), "statistics");
    const char *desc, *pval;
    int64_t val;
    while (st->next(st) == 0) {
        CHECK(st->get_value(st, &desc, &pval, &val), "statistic");
        fprintf(out, "%s\t%" PRId64 "\n", desc, val);
    }
    st->close(st);
    long long before = wchar();
    CHECK(conn->close(conn, NULL), "close");
    long long after = wchar();
    fclose(out);
    fwrite(report, 1, report_len, stdout);
    printf("process: wchar before close\t%lld\n", before - at_start);
    printf("process: wchar after close\t%lld\n", after - at_start);
    free(value);
    return 0;
}
