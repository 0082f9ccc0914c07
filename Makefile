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

PKGS := hdf5 libcjson yajl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
OPT ?= -O2 -g
SAN ?=
CFLAGS_COMMON := -std=c11 $(OPT) $(WARN) $(SAN) -D_GNU_SOURCE -Ianchors -Ipreload
CFLAGS_LIB := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -DANCHOR_TLS_INITIAL_EXEC
CFLAGS_POST := $(CFLAGS_COMMON) -Ipostproc $(PKG_CFLAGS)

LIB_SRC := $(wildcard preload/*.c) anchors/ring_writer.c
POST_SRC := $(wildcard postproc/*.c) $(filter-out anchors/ring_writer.c,$(wildcard anchors/*.c))
LIB_OBJ := $(patsubst %.c,$(B)/lib/%.o,$(LIB_SRC))
POST_OBJ := $(patsubst %.c,$(B)/post/%.o,$(POST_SRC))
HDRS := $(wildcard anchors/*.h preload/*.h postproc/*.h)

PY_EXT_SUFFIX := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_INC := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_SRC := $(wildcard python_hooks/src/*.c)
PY_MOD := $(if $(PY_SRC),$(B)/python/anchor/_anchor$(PY_EXT_SUFFIX))

.PHONY: all test test-quick bench fuzz install clean check-deps

# Unit tests of the attribution math: the attrib objects only, no main.c.
ATTRIB_OBJ := $(patsubst %.c,$(B)/post/%.o,$(wildcard postproc/attrib*.c))
$(B)/test_attrib: tests/unit/test_attrib.c $(ATTRIB_OBJ) $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(ATTRIB_OBJ) -lm
all: $(B)/libanchor.so $(B)/anchorpost $(PY_MOD)

$(B)/lib/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LIB) -c $< -o $@

$(B)/post/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_POST) -c $< -o $@

$(B)/libanchor.so: $(LIB_OBJ)
	$(CC) $(SAN) -shared -Wl,-soname,libanchor.so -Wl,-z,defs -o $@ $^ -ldl -lpthread -lunwind

$(B)/anchorpost: $(POST_OBJ)
	$(CC) $(SAN) -o $@ $^ $(PKG_LIBS) -lm -lpthread

# The Python module: compiled against the interpreter in use, with its own
# copy of the ring writer (it uses the preloaded one when present).
$(B)/python/anchor/_anchor$(PY_EXT_SUFFIX): $(PY_SRC) anchors/ring_writer.c $(HDRS) $(wildcard python_hooks/anchor/*.py python_hooks/anchor/*.pyi)
	@mkdir -p $(dir $@)
	cp python_hooks/anchor/*.py python_hooks/anchor/*.pyi python_hooks/anchor/py.typed $(dir $@) 2>/dev/null || true
	$(CC) $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -I$(PY_INC) -shared -o $@ $(PY_SRC) anchors/ring_writer.c -ldl -lpthread

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

clean:
	rm -rf $(B)
