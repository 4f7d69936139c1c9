# lance_parts - PGXS build.
#
#   make && make install        build and install the extension
#   make check-core             core unit tests (plain C, no server)
#   make check-core-sanitize    the same under ASan and UBSan (clang)
#   make check-s3               the core S3 store against a real server (LP_S3_*)
#   make fuzz FUZZ_TARGET=fuzz_manifest FUZZ_SECONDS=60
#                               libFuzzer run of one target (test/fuzz/fuzz_*.c)
#   make testdata               reference datasets written by npm lancedb
#   make installcheck           pg_regress against a running server
#
# The whole suite (cluster, data, every layer) is test/run.sh; see README.md.

EXTENSION = lance_parts
EXTVERSION = 0.3.0
MODULE_big = lance_parts

# The core (src/core, PostgreSQL-free) is its own static library, compiled
# with only its own include directories, so that no build lets it include a
# PostgreSQL header.  The module, the core tests and the fuzzers link it.
PROTOS     = $(sort $(wildcard src/proto/*.proto))
PROTO_SRCS = $(PROTOS:.proto=.pb-c.c)
PROTO_HDRS = $(PROTOS:.proto=.pb-c.h)
CORE_SRCS  = $(sort $(shell find src/core -name '*.c'))
PG_SRCS    = $(sort $(shell find src/pg -name '*.c'))
# PostgreSQL-free I/O helpers the server and the core tests share: the local
# stores' file walks, the libcurl transport of S3
POSIX_SRCS = $(sort $(wildcard src/platform/*.c))
POSIX_LIBS = -lcurl
OBJS       = $(PG_SRCS:.c=.o) $(POSIX_SRCS:.c=.o)

DATA = $(wildcard sql/$(EXTENSION)--*.sql)
REGRESS = $(sort $(basename $(notdir $(wildcard test/sql/[0-9]*.sql))))
REGRESS_OPTS = --inputdir=test --outputdir=results

WARNINGS = -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare
# The PostgreSQL layer sees the core's public headers only: no generated
# protobuf headers (they are internal to the core).  Every header is
# included with its folder: "base/lp_pg_error.h", "store/lp_pg_storage.h",
# "io/lp_storage.h", "platform/lp_posix_walk.h".
PG_CPPFLAGS = -I$(srcdir)/src/pg -I$(srcdir)/src/core -I$(srcdir)/src
PG_CFLAGS = $(WARNINGS)
BUILD ?= build
CORE_LIB = $(BUILD)/liblpcore.a
SHLIB_LINK = $(CORE_LIB) -lprotobuf-c -lzstd -llz4 -lcrypto -lcurl -lm
EXTRA_CLEAN = $(PROTO_SRCS) $(PROTO_HDRS) build results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
# JIT bitcode is of no use for this module and needs clang at install time.
override with_llvm = no
# Rebuild objects when a header they include changes (gcc -MMD).
override autodepend = yes
include $(PGXS)

# protoc-c runs at build time; the generated C is never committed.
%.pb-c.c %.pb-c.h: %.proto
	protoc-c --proto_path=$(srcdir)/src/proto --c_out=$(srcdir)/src/proto $<

# ---- the core library, in three builds ---------------------------------------
#   $(BUILD)/liblpcore.a           gcc, position-independent: the module, check-core
#   $(BUILD)/sanitize/liblpcore.a  clang with ASan and UBSan: check-core-sanitize
#   $(BUILD)/fuzz/liblpcore.a      clang with libFuzzer coverage, ASan, UBSan: fuzzers
# -Wno-missing-braces: protoc-c's generated initializers trip it.
CORE_CFLAGS = -std=gnu11 -g -O2 -fPIC -Wall -Wextra -Werror -Wno-missing-braces -Isrc/core -Isrc/proto
CORE_LIBS = -lprotobuf-c -lzstd -llz4 -lcrypto -lm
SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
CORE_UNITS = $(PROTO_SRCS:.c=) $(CORE_SRCS:.c=)

$(BUILD)/core/%.o: %.c $(PROTO_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CORE_CFLAGS) -MMD -MP -c -o $@ $<
$(BUILD)/sanitize/%.o: %.c $(PROTO_HDRS)
	@mkdir -p $(dir $@)
	clang $(CORE_CFLAGS) -O1 $(SANITIZE) -MMD -MP -c -o $@ $<
$(BUILD)/fuzz/%.o: %.c $(PROTO_HDRS)
	@mkdir -p $(dir $@)
	clang $(CORE_CFLAGS) -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
		-MMD -MP -c -o $@ $<

$(CORE_LIB): $(addprefix $(BUILD)/core/,$(addsuffix .o,$(CORE_UNITS)))
	rm -f $@ && ar rcs $@ $^
$(BUILD)/sanitize/liblpcore.a: $(addprefix $(BUILD)/sanitize/,$(addsuffix .o,$(CORE_UNITS)))
	rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/liblpcore.a: $(addprefix $(BUILD)/fuzz/,$(addsuffix .o,$(CORE_UNITS)))
	rm -f $@ && ar rcs $@ $^

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

$(shlib): $(CORE_LIB)

# ---- core tests and tools, linked with the library --------------------------
CORE_TEST_SRCS = $(sort $(wildcard test/core/*.c))
CORE_TEST_CFLAGS = -std=gnu11 -g -O1 -Wall -Wextra -Werror -Wno-missing-braces -Isrc/core -Isrc -Isrc/platform -Isrc/proto

# The tests' POSIX store shares src/platform with the server's local store
# (the tests include its headers without the folder, hence -Isrc/platform).
$(BUILD)/core-tests: $(CORE_TEST_SRCS) $(POSIX_SRCS) $(wildcard test/core/*.h src/platform/*.h) $(CORE_LIB)
	$(CC) $(CORE_TEST_CFLAGS) -o $@ $(CORE_TEST_SRCS) $(POSIX_SRCS) $(CORE_LIB) $(CORE_LIBS) $(POSIX_LIBS)

$(BUILD)/core-tests-sanitize: $(CORE_TEST_SRCS) $(POSIX_SRCS) $(wildcard test/core/*.h src/platform/*.h) $(BUILD)/sanitize/liblpcore.a
	clang $(CORE_TEST_CFLAGS) $(SANITIZE) -o $@ $(CORE_TEST_SRCS) $(POSIX_SRCS) $(BUILD)/sanitize/liblpcore.a $(CORE_LIBS) $(POSIX_LIBS)

# Encoding tree of every page: $(BUILD)/page_encodings FILE.lance...
$(BUILD)/page_encodings: test/tools/page_encodings.c $(CORE_LIB)
	$(CC) $(CORE_TEST_CFLAGS) -o $@ $< $(CORE_LIB) $(CORE_LIBS)

# S3 integration tests: the core's S3 store over the server's libcurl requests
# against a real server (LP_S3_* from scripts/s3-server.sh; test/run.sh --only s3).
S3_TEST_SRCS = $(sort $(wildcard test/s3/*.c)) test/core/test_main.c
$(BUILD)/s3-tests: $(S3_TEST_SRCS) $(POSIX_SRCS) $(wildcard test/s3/*.h test/core/lp_test.h src/platform/*.h) $(CORE_LIB)
	$(CC) $(CORE_TEST_CFLAGS) -Itest/core -o $@ $(S3_TEST_SRCS) $(POSIX_SRCS) $(CORE_LIB) $(CORE_LIBS) $(POSIX_LIBS)

check-s3: $(BUILD)/s3-tests
	$(BUILD)/s3-tests

# Rows given as JSON encoded into a data file and appended to a dataset (the
# reference reads it back in test/reference/encode.test.cjs):
#   $(BUILD)/encode_append DATASET_DIR ROWS.json [BATCH_ROWS]
ENCODE_APPEND_SRCS = test/tools/encode_append.c test/core/json_reader.c \
	test/core/lp_encode_round_trip.c test/core/lp_test_files.c test/core/lp_test_store.c $(POSIX_SRCS)
$(BUILD)/encode_append: $(ENCODE_APPEND_SRCS) $(wildcard test/core/*.h) $(CORE_LIB)
	$(CC) $(CORE_TEST_CFLAGS) -Itest/core -o $@ $(ENCODE_APPEND_SRCS) $(CORE_LIB) $(CORE_LIBS) $(POSIX_LIBS)

check-core: $(BUILD)/core-tests
	$(BUILD)/core-tests $(TESTDATA_ARG)

check-core-sanitize: $(BUILD)/core-tests-sanitize
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(BUILD)/core-tests-sanitize $(TESTDATA_ARG)

FUZZ_TARGETS = $(basename $(notdir $(wildcard test/fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 60
FUZZ_TARGET ?= fuzz_file_metadata

$(BUILD)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/lp_fuzz.h $(BUILD)/fuzz/liblpcore.a
	clang $(CORE_TEST_CFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $< $(BUILD)/fuzz/liblpcore.a $(CORE_LIBS)

# The encoder's and the field reader's fuzzers share their round trips and
# row comparisons with the unit tests.
$(BUILD)/fuzz_encode $(BUILD)/fuzz_field_reader: $(BUILD)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/lp_fuzz.h \
		test/core/lp_encode_round_trip.c test/core/lp_encode_round_trip.h $(BUILD)/fuzz/liblpcore.a
	clang $(CORE_TEST_CFLAGS) -Itest/core -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $< test/core/lp_encode_round_trip.c $(BUILD)/fuzz/liblpcore.a $(CORE_LIBS)

fuzz: $(BUILD)/$(FUZZ_TARGET)
	@mkdir -p $(BUILD)/fuzz-corpus-$(FUZZ_TARGET)
	$(BUILD)/$(FUZZ_TARGET) -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
		$(BUILD)/fuzz-corpus-$(FUZZ_TARGET) test/fuzz/corpus/$(FUZZ_TARGET)

# ---- reference data (npm @lancedb/lancedb 0.39.0) ----------------------------
TESTDATA ?= $(CURDIR)/test/data/generated
TESTDATA_ARG = $(if $(wildcard $(TESTDATA)/manifest.json),$(TESTDATA),)

test/reference/node_modules: test/reference/package.json
	cd test/reference && npm install --no-audit --no-fund
	@touch $@

# Early 2.0 files the pinned reference cannot write, by old lancedb releases
# (test/reference/legacy/package.json) into $(TESTDATA)/legacy.
test/reference/legacy/node_modules: test/reference/legacy/package.json
	cd test/reference/legacy && npm install --no-audit --no-fund
	@touch $@

testdata: test/reference/node_modules test/reference/legacy/node_modules
	cd test/reference && LANCEDB_LOG=error node generate.cjs $(TESTDATA)
	cd test/reference/legacy && LANCEDB_LOG=error LANCE_USE_BITPACKING=1 \
		node generate_legacy.cjs $(TESTDATA)/legacy

.PHONY: check-core check-core-sanitize check-s3 fuzz testdata
