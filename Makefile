# lance_parts - PGXS build.
#
#   make && make install        build and install the extension
#   make check-core             core unit tests (plain C, no server)
#   make check-core-sanitize    the same under ASan and UBSan (clang)
#   make fuzz FUZZ_SECONDS=60   libFuzzer run of the metadata parser
#   make testdata               reference datasets written by npm lancedb
#   make installcheck           pg_regress against a running server
#
# The whole suite (cluster, data, every layer) is test/run.sh; see README.md.

EXTENSION = lance_parts
EXTVERSION = 0.2.0
MODULE_big = lance_parts

PROTOS     = $(sort $(wildcard src/proto/*.proto))
PROTO_SRCS = $(PROTOS:.proto=.pb-c.c)
PROTO_HDRS = $(PROTOS:.proto=.pb-c.h)
CORE_SRCS  = $(sort $(wildcard src/core/*.c))
PG_SRCS    = $(sort $(wildcard src/*.c))
# plain POSIX helpers of the local stores (the server's and the core tests')
POSIX_SRCS = $(sort $(wildcard src/posix/*.c))
OBJS       = $(PROTO_SRCS:.c=.o) $(CORE_SRCS:.c=.o) $(POSIX_SRCS:.c=.o) $(PG_SRCS:.c=.o)

DATA = $(wildcard sql/$(EXTENSION)--*.sql)
REGRESS = $(sort $(basename $(notdir $(wildcard sql/[0-9]*.sql))))
REGRESS_OPTS = --inputdir=. --outputdir=results

WARNINGS = -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare
PG_CPPFLAGS = -I$(srcdir)/src -I$(srcdir)/src/core -I$(srcdir)/src/posix -I$(srcdir)/src/proto
PG_CFLAGS = $(WARNINGS)
SHLIB_LINK = -lprotobuf-c -lzstd -llz4 -lcurl
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

$(CORE_SRCS:.c=.o) $(POSIX_SRCS:.c=.o) $(PG_SRCS:.c=.o): $(PROTO_HDRS)

# protoc-c's initializers of oneof-bearing messages trip -Wmissing-braces.
$(PROTO_SRCS:.c=.o): CFLAGS += -Wno-missing-braces

# ---- core, built without PostgreSQL ------------------------------------------
BUILD ?= build
CORE_TEST_SRCS = $(sort $(wildcard test/core/*.c))
# -Wno-missing-braces: protoc-c's generated initializers trip it.
CORE_CFLAGS = -std=gnu11 -g -O1 -Wall -Wextra -Werror -Wno-missing-braces -Isrc/core -Isrc/posix -Isrc/proto
CORE_LIBS = -lprotobuf-c -lzstd -llz4
SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

$(BUILD)/core-tests: $(PROTO_SRCS) $(PROTO_HDRS) $(CORE_SRCS) $(POSIX_SRCS) $(CORE_TEST_SRCS) $(wildcard src/core/*.h src/posix/*.h test/core/*.h)
	@mkdir -p $(BUILD)
	$(CC) $(CORE_CFLAGS) -o $@ $(PROTO_SRCS) $(CORE_SRCS) $(POSIX_SRCS) $(CORE_TEST_SRCS) $(CORE_LIBS)

$(BUILD)/core-tests-sanitize: $(PROTO_SRCS) $(PROTO_HDRS) $(CORE_SRCS) $(POSIX_SRCS) $(CORE_TEST_SRCS) $(wildcard src/core/*.h src/posix/*.h test/core/*.h)
	@mkdir -p $(BUILD)
	clang $(CORE_CFLAGS) $(SANITIZE) -o $@ $(PROTO_SRCS) $(CORE_SRCS) $(POSIX_SRCS) $(CORE_TEST_SRCS) $(CORE_LIBS)

# Encoding tree of every page: $(BUILD)/page_encodings FILE.lance...
$(BUILD)/page_encodings: test/tools/page_encodings.c $(PROTO_SRCS) $(PROTO_HDRS) $(CORE_SRCS)
	@mkdir -p $(BUILD)
	$(CC) $(CORE_CFLAGS) -o $@ $< $(PROTO_SRCS) $(CORE_SRCS) $(CORE_LIBS)

check-core: $(BUILD)/core-tests
	$(BUILD)/core-tests $(TESTDATA_ARG)

check-core-sanitize: $(BUILD)/core-tests-sanitize
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(BUILD)/core-tests-sanitize $(TESTDATA_ARG)

FUZZ_TARGETS = $(basename $(notdir $(wildcard test/fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 60
FUZZ_TARGET ?= fuzz_file_metadata

$(BUILD)/fuzz_%: test/fuzz/fuzz_%.c $(PROTO_SRCS) $(PROTO_HDRS) $(CORE_SRCS)
	@mkdir -p $(BUILD)
	clang $(CORE_CFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $< $(PROTO_SRCS) $(CORE_SRCS) $(CORE_LIBS)

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

testdata: test/reference/node_modules
	cd test/reference && LANCEDB_LOG=error node generate.cjs $(TESTDATA)

.PHONY: check-core check-core-sanitize fuzz testdata
