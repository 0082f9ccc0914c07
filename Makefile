# anchor: libanchor.so (preload/), anchorpost (postproc/), the `anchor`
# Python module (python_hooks/).  Dependencies: scripts/install-deps.sh.
#
#   make            build everything into build/
#   make test       the whole suite (what .ci/run runs)
#   make test-quick the inner-loop subset
#   make bench      benchmarks (results go to BENCHMARKS.md by hand)
#   make fuzz       longer fuzzing of the parsers
#   make install PREFIX=/usr/local DESTDIR=

PREFIX ?= /usr/local
DESTDIR ?=
PYTHON ?= python3
CC ?= cc
B ?= build
# clang does not link sanitizer runtimes into shared objects: ZDEFS= there.
ZDEFS ?= -Wl,-z,defs

PKGS := hdf5 libcjson yajl cairo
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
OPT ?= -O2 -g
SAN ?=
CFLAGS_COMMON := -std=c11 $(OPT) $(WARN) $(SAN) -D_GNU_SOURCE -Ianchors -Ipreload
CFLAGS_LIB := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -DANCHOR_TLS_INITIAL_EXEC
# postproc/ is layered: cmd (option parsing, one file per subcommand) over
# model, align, attrib, output and input; util is shared by all of them.
POST_DIRS := cmd input model align attrib output util
CFLAGS_POST := $(CFLAGS_COMMON) $(addprefix -Ipostproc/,$(POST_DIRS)) $(PKG_CFLAGS)

LIB_SRC := $(wildcard preload/*.c) anchors/ring_writer.c anchors/ring_path.c anchors/ring_procstart.c
POST_SRC := $(wildcard postproc/*/*.c) $(filter-out anchors/ring_writer.c anchors/ring_path.c anchors/ring_procstart.c,$(wildcard anchors/*.c))
LIB_OBJ := $(patsubst %.c,$(B)/lib/%.o,$(LIB_SRC))
POST_OBJ := $(patsubst %.c,$(B)/post/%.o,$(POST_SRC))
HDRS := $(wildcard anchors/*.h preload/*.h postproc/*/*.h)

PY_EXT_SUFFIX := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_INC := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_SRC := $(wildcard python_hooks/src/*.c)
PY_MOD := $(if $(PY_SRC),$(B)/python/anchor/_anchor$(PY_EXT_SUFFIX))

.PHONY: all test test-quick bench fuzz install clean check-deps
.DEFAULT_GOAL := all

# Unit tests of the attribution math: the attrib objects only, no main.c.
ATTRIB_OBJ := $(patsubst %.c,$(B)/post/%.o,$(wildcard postproc/attrib/attrib*.c))
$(B)/test_attrib: tests/unit/test_attrib.c $(ATTRIB_OBJ) $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(ATTRIB_OBJ) -lm
# Out-of-memory fault injection (tests/t_oom_inject.sh): every object of
# anchorpost but main.o, our own malloc/calloc/realloc/strdup wrapped
# (libhdf5's and libc's own allocations are not: the test is about ours).
OOM_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup
$(B)/test_oom: tests/unit/test_oom.c $(filter-out %/main.o,$(POST_OBJ)) $(HDRS)
	$(CC) $(CFLAGS_POST) $(SAN) -o $@ $< $(filter-out %/main.o,$(POST_OBJ)) $(OOM_WRAP) $(PKG_LIBS) -lm -lpthread
all: $(B)/libanchor.so $(B)/anchorpost $(PY_MOD)

$(B)/lib/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LIB) -c $< -o $@

$(B)/post/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_POST) -c $< -o $@

$(B)/libanchor.so: $(LIB_OBJ)
	$(CC) $(SAN) -shared -Wl,-soname,libanchor.so $(ZDEFS) -o $@ $^ -ldl -lpthread -lunwind

$(B)/anchorpost: $(POST_OBJ)
	$(CC) $(SAN) -o $@ $^ $(PKG_LIBS) -lm -lpthread

# The Python module: compiled against the interpreter in use.  Its own copy
# of the ring writer comes in through python_hooks/src/writer.c (it uses the
# preloaded one when there is one); setup.py compiles the same file list.
# sitecustomize.py (ANCHOR_AUTO without an import) sits beside the package.
PY_PKG_FILES := $(wildcard python_hooks/anchor/*.py python_hooks/anchor/*.pyi python_hooks/anchor/py.typed)
# TLS descriptors: the module is dlopen'ed, so without them every access to
# the writer's thread chunk is a __tls_get_addr call (5 per record).
PY_TLS := $(shell $(CC) -mtls-dialect=gnu2 -fPIC -E -x c /dev/null >/dev/null 2>&1 && echo -mtls-dialect=gnu2)
$(B)/python/anchor/_anchor$(PY_EXT_SUFFIX): $(PY_SRC) $(wildcard python_hooks/src/*.h) anchors/ring_writer.c anchors/ring_path.c anchors/ring_procstart.c $(HDRS) $(PY_PKG_FILES) python_hooks/site/sitecustomize.py
	@mkdir -p $(dir $@)
	cp $(PY_PKG_FILES) $(dir $@)
	cp python_hooks/site/sitecustomize.py $(B)/python/sitecustomize.py
	$(CC) $(CFLAGS_COMMON) -fPIC -fvisibility=hidden $(PY_TLS) -I$(PY_INC) -Ipython_hooks/src -shared -o $@ $(PY_SRC) -ldl -lpthread

test: all
	bash tests/run.sh

test-quick: all
	QUICK=1 bash tests/run.sh

bench: all
	bash bench/run.sh

fuzz: all
	bash tests/fuzz/run.sh 300

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(B)/libanchor.so $(DESTDIR)$(PREFIX)/lib/libanchor.so
	install -m 0644 preload/anchor.h $(DESTDIR)$(PREFIX)/include/anchor.h
	install -m 0755 $(B)/anchorpost $(DESTDIR)$(PREFIX)/bin/anchorpost
	install -d $(DESTDIR)$(PREFIX)/lib/anchor/python
	cp -r $(B)/python/. $(DESTDIR)$(PREFIX)/lib/anchor/python/

clean:
	rm -rf $(B)

# ---- test victims and checkers (tests/victims/) ----
VICTIMS := $(B)/victims/marker $(B)/victims/ring_check
READER_SRC := anchors/ring_reader.c anchors/ring_clock.c anchors/ring_procs.c
all: $(VICTIMS)

$(B)/victims/marker: tests/victims/marker.c $(B)/libanchor.so preload/anchor.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -pthread -o $@ $< -L$(B) -lanchor -Wl,-rpath,'$$ORIGIN/..'

$(B)/victims/ring_check: tests/victims/ring_check.c $(READER_SRC) $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(READER_SRC)

# ---- synthetic rings (tests of multi-ring merging, bench/mpi_scale.sh) ----
all: $(B)/tools/ringgen
$(B)/tools/ringgen: tools/ringgen/ringgen.c anchors/ring_format.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< -lm

# Attribution accuracy against ground truth (real perun, emulated sensor);
# several minutes.  The test suite runs the --quick subset.
.PHONY: accuracy
accuracy: all
	$(PYTHON) bench/accuracy.py
