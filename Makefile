# anchor: libanchor.so (preload/), anchorpost (postproc/), the `anchor`
# Python module (python_hooks/).  Dependencies: scripts/install-deps.sh.
#
#   make            build everything into build/
#   make test       the whole suite (what .ci/run runs)
#   make test-quick the inner-loop subset
#   make bench      benchmarks (results go to BENCHMARKS.md by hand)
#   make fuzz       longer fuzzing of the parsers
#   make pythons    the module for every CPython 3.8+ under pyenv as well
#   make install PREFIX=/usr/local DESTDIR=

PREFIX ?= /usr/local
DESTDIR ?=
PYTHON ?= python3
CC ?= cc
B ?= build
# clang does not link sanitizer runtimes into shared objects: ZDEFS= there.
ZDEFS ?= -Wl,-z,defs

# The one source of truth for the version: VERSION.  include/anchor_version.h
# is generated from it (and committed, so setup.py and tests/fuzz build
# without make); setup.py, anchorpost --version and every ring's header
# follow.  include/ holds the installed headers (anchor.h, anchor_version.h)
# and is the bottom of the include order: every part sees it and anchors/;
# only libanchor's own files see preload/ (an upward include fails to build).
VERSION := $(shell cat VERSION)
VERSION_WORDS := $(subst ., ,$(VERSION))
SOMAJOR := $(word 1,$(VERSION_WORDS))

PKGS := hdf5 libcjson yajl cairo zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
OPT ?= -O2 -g
SAN ?=
CFLAGS_BASE := -std=c11 $(OPT) $(WARN) $(SAN) -D_GNU_SOURCE
CFLAGS_COMMON := $(CFLAGS_BASE) -Iinclude -Ianchors
CFLAGS_LIB := $(CFLAGS_COMMON) -Ipreload -fPIC -fvisibility=hidden -DANCHOR_TLS_INITIAL_EXEC
# postproc/ is layered (postproc/README.md draws it; tests/cli/t_layers.sh
# checks it): every include names its folder ("model/run_model.h",
# "anchors/ring_reader.h"), so a crossing shows in the include line; the
# installed headers (include/) by their bare names, as a user writes them.
CFLAGS_POST := $(CFLAGS_BASE) -I. -Iinclude -Ipostproc $(PKG_CFLAGS)

# anchors/ holds both sides of the ring: what the writers compile in
# (libanchor.so and the Python module) and what the reader needs.
WRITER_SRC := anchors/ring_writer.c anchors/ring_path.c anchors/ring_procstart.c anchors/ring_env.c
LIB_SRC := $(wildcard preload/*.c) $(WRITER_SRC)
POST_SRC := $(wildcard postproc/*/*.c) $(filter-out $(WRITER_SRC),$(wildcard anchors/*.c))
LIB_OBJ := $(patsubst %.c,$(B)/lib/%.o,$(LIB_SRC))
POST_OBJ := $(patsubst %.c,$(B)/post/%.o,$(POST_SRC))
HDRS := $(wildcard include/*.h anchors/*.h preload/*.h postproc/*/*.h)

PY_EXT_SUFFIX := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_INC := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_SRC := $(wildcard python_hooks/src/*.c)
PY_MOD := $(if $(PY_SRC),$(B)/python/anchor/_anchor$(PY_EXT_SUFFIX))

.PHONY: all test test-quick bench fuzz install uninstall clean check-deps python-module pythons
.DEFAULT_GOAL := all

# Unit tests of the attribution math: the attrib objects only, no main.c.
ATTRIB_OBJ := $(patsubst %.c,$(B)/post/%.o,$(wildcard postproc/attrib/attrib*.c))
$(B)/test_attrib: tests/unit/test_attrib.c tests/unit/unit_check.h $(ATTRIB_OBJ) $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(ATTRIB_OBJ) -lm
# Known answers for ms counters and averaged GPU readings (issue 14).
$(B)/test_counters: tests/unit/test_counters.c tests/unit/unit_check.h $(ATTRIB_OBJ) $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(ATTRIB_OBJ) -lm
# Unit tests of the option parser (options.c, with diag.c and outfile.c for
# its messages).
OPTIONS_OBJ := $(B)/post/postproc/cmd/options.o $(B)/post/postproc/util/diag.o $(B)/post/postproc/output/outfile.o $(B)/post/postproc/output/temp_name.o $(B)/post/postproc/input/input_file.o $(B)/post/postproc/util/file_ids.o
$(B)/test_options: tests/unit/test_options.c tests/unit/unit_check.h $(OPTIONS_OBJ) $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(OPTIONS_OBJ) -lm
# Unit tests of single modules (tests/unit/t_unit_modules.sh): each links its
# module and what that needs, nothing else.
PO := $(B)/post/postproc
AO := $(B)/post/anchors
$(B)/test_csv: tests/unit/test_csv.c tests/unit/unit_check.h $(PO)/output/csv.o $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(filter %.o,$^) -lm
$(B)/test_timebase: tests/unit/test_timebase.c tests/unit/unit_check.h $(PO)/output/timebase.o $(PO)/model/timebase.o $(PO)/output/csv.o $(AO)/ring_clock.o $(AO)/ring_reader.o $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(filter %.o,$^) -lm
$(B)/test_phase_set: tests/unit/test_phase_set.c tests/unit/unit_check.h $(PO)/phase/phase_set.o $(AO)/ring_procs.o $(AO)/ring_reader.o $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(filter %.o,$^) -lm
$(B)/test_perun_reads: tests/unit/test_perun_reads.c tests/unit/unit_check.h $(PO)/align/perun_reads.o $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(filter %.o,$^) -lm
$(B)/test_slurm_acct: tests/unit/test_slurm_acct.c tests/unit/unit_check.h $(PO)/input/slurm_acct.o $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(filter %.o,$^) -lm
$(B)/test_sensor_model: tests/unit/test_sensor_model.c tests/unit/unit_check.h $(PO)/attrib/sensor_model.o $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(filter %.o,$^) -lm
$(B)/test_sensor_ident: tests/unit/test_sensor_ident.c tests/unit/unit_check.h $(PO)/attrib/sensor_ident.o $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(filter %.o,$^) -lm
# phase_flags reads a run model (energy_model.h): every object but main.o.
$(B)/test_phase_flags: tests/unit/test_phase_flags.c tests/unit/unit_check.h $(filter-out %/main.o,$(POST_OBJ)) $(HDRS)
	$(CC) $(CFLAGS_POST) -o $@ $< $(filter %.o,$^) $(PKG_LIBS) -lm -lpthread
# Out-of-memory fault injection (tests/cli/t_oom_inject_slow.sh): every object of
# anchorpost but main.o, our own malloc/calloc/realloc/strdup wrapped
# (libhdf5's and libc's own allocations are not: the test is about ours).
OOM_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup
$(B)/test_oom: tests/unit/test_oom.c tests/unit/unit_check.h $(filter-out %/main.o,$(POST_OBJ)) $(HDRS)
	$(CC) $(CFLAGS_POST) $(SAN) -o $@ $< $(filter-out %/main.o,$(POST_OBJ)) $(OOM_WRAP) $(PKG_LIBS) -lm -lpthread
all: $(B)/libanchor.so $(B)/anchorpost $(PY_MOD)

# The module for one interpreter (PYTHON=...): each version's extension has
# its own EXT_SUFFIX, so all of them sit side by side in $(B)/python/anchor.
python-module: $(PY_MOD)

# ... and for each CPython that requires-python covers under pyenv (issue
# 22: the suite runs the module's tests on each, t_py_cpythons_slow.sh).
PYENV_PYTHONS := $(wildcard $(HOME)/.pyenv/versions/3.*/bin/python3)
pythons: python-module
	@for py in $(PYENV_PYTHONS); do \
	  if $$py -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then \
	    $(MAKE) --no-print-directory PYTHON=$$py python-module || exit 1; fi; done

include/anchor_version.h: VERSION
	printf '%s\n' '/* anchor_version.h - generated by make from the file VERSION, the one' \
	  ' * source of truth for anchor'"'"'s version; edit VERSION, not this file. */' \
	  '#ifndef ANCHOR_VERSION_H' '#define ANCHOR_VERSION_H' \
	  '#define ANCHOR_VERSION_MAJOR $(word 1,$(VERSION_WORDS))' \
	  '#define ANCHOR_VERSION_MINOR $(word 2,$(VERSION_WORDS))' \
	  '#define ANCHOR_VERSION_PATCH $(word 3,$(VERSION_WORDS))' \
	  '#define ANCHOR_VERSION "$(VERSION)"' '#endif' >$@.tmp && mv $@.tmp $@

$(B)/lib/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LIB) -c $< -o $@

$(B)/post/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_POST) -c $< -o $@

# soname libanchor.so.MAJOR; in build/ the file keeps its plain name (what
# LD_PRELOAD=build/libanchor.so uses) and libanchor.so.MAJOR links to it for
# programs linked with -lanchor.  -z nodelete: dlclose must not unmap the
# signal handlers (crash record, SIGBUS guard) that stay installed in the host.
$(B)/libanchor.so: $(LIB_OBJ)
	$(CC) $(SAN) -shared -Wl,-soname,libanchor.so.$(SOMAJOR) -Wl,-z,nodelete $(ZDEFS) -o $@ $^ -ldl -lpthread -lgcc_s
	ln -sf libanchor.so $(B)/libanchor.so.$(SOMAJOR)

$(B)/anchorpost: $(POST_OBJ)
	$(CC) $(SAN) -o $@ $^ $(PKG_LIBS) -lm -lpthread

# The device check's bundle (scripts/gpu-check.sh, docs/gpu-check.md): what
# a GPU machine with only its driver needs, a few hundred KiB.  The
# workload loads libcuda.so.1 and libnvidia-ml at run time (so it builds
# here, without a GPU); its kernels come as a fatbin of cubins for
# sm_80/86/89/90 plus PTX of an old ISA (7.0) for a driver older than this
# nvcc; without nvcc the bundle has no kernels and only --stand-in runs.
GC := $(B)/gpu-check
NVCC ?= nvcc
GC_CUBINS := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
	-gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
GC_FILES := $(GC)/gpucheck $(GC)/anchor-sensors $(GC)/libnvml_stub.so
ifneq ($(shell command -v $(NVCC) 2>/dev/null),)
GC_FILES += $(GC)/gpucheck_kernels.fatbin $(GC)/gpucheck_kernels.ptx
endif
.PHONY: gpu-check
gpu-check: $(GC_FILES)
$(B)/post.a: $(filter-out %/main.o,$(POST_OBJ))
	rm -f $@ && ar rcs $@ $^
$(GC)/anchor-sensors: tools/gpu_check/sensors_main.c $(B)/post.a
	@mkdir -p $(GC)
	$(CC) $(CFLAGS_POST) -o $@ $< $(B)/post.a -lm -lpthread
$(GC)/libanchor.so.$(SOMAJOR): $(B)/libanchor.so
	@mkdir -p $(GC)
	cp $< $@
$(GC)/gpucheck: tools/gpu_check/gpucheck.c include/anchor.h $(GC)/libanchor.so.$(SOMAJOR)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -o $@ $< -L$(GC) \
	  -l:libanchor.so.$(SOMAJOR) -Wl,-rpath,'$$ORIGIN' -ldl -lpthread
$(GC)/libnvml_stub.so: tools/emulated_power/nvml_stub/libnvml_stub.c
	@mkdir -p $(GC)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -shared -fPIC -o $@ $< -lm -lpthread
$(GC)/gpucheck_kernels.fatbin: tools/gpu_check/gpucheck_kernels.cu
	@mkdir -p $(GC)
	$(NVCC) -fatbin $(GC_CUBINS) -o $@ $<
$(GC)/gpucheck_kernels.ptx: tools/gpu_check/gpucheck_kernels.cu
	@mkdir -p $(GC)
	$(NVCC) -ptx -arch=compute_80 -o $@.tmp $< && sed 's/^\.version .*/.version 7.0/' $@.tmp >$@ && rm -f $@.tmp

# Bash completion, generated from the option tables (postproc/cmd/options.h);
# install it as $(PREFIX)/share/bash-completion/completions/anchorpost.
all: $(B)/anchorpost.bash
$(B)/anchorpost.bash: $(B)/anchorpost
	$(B)/anchorpost --completion bash > $@.tmp && mv $@.tmp $@

# The Python module: compiled against the interpreter in use.  Its own copy
# of the ring writer comes in through python_hooks/src/writer.c (it uses the
# preloaded one when there is one); setup.py compiles the same file list.
# sitecustomize.py (ANCHOR_AUTO without an import) sits beside the package.
PY_PKG_FILES := $(wildcard python_hooks/anchor/*.py python_hooks/anchor/*.pyi python_hooks/anchor/py.typed)
# TLS descriptors: the module is dlopen'ed, so without them every access to
# the writer's thread chunk is a __tls_get_addr call (5 per record).
PY_TLS := $(shell $(CC) -mtls-dialect=gnu2 -fPIC -E -x c /dev/null >/dev/null 2>&1 && echo -mtls-dialect=gnu2)
$(B)/python/anchor/_anchor$(PY_EXT_SUFFIX): $(PY_SRC) $(wildcard python_hooks/src/*.h) $(WRITER_SRC) $(HDRS) $(PY_PKG_FILES) python_hooks/site/sitecustomize.py python_hooks/site/_anchor_autostart.py
	@mkdir -p $(dir $@)
	cp $(PY_PKG_FILES) $(dir $@)
	cp python_hooks/site/sitecustomize.py python_hooks/site/_anchor_autostart.py $(B)/python/
	$(CC) $(CFLAGS_COMMON) -fPIC -fvisibility=hidden $(PY_TLS) -I$(PY_INC) -Ipython_hooks/src -shared -o $@ $(PY_SRC) -ldl -lpthread

test: all
	bash tests/run.sh

test-quick: all
	QUICK=1 bash tests/run.sh

bench: all
	bash bench/run.sh

fuzz: all
	bash tests/fuzz/run.sh 300

# make install: the library (real file libanchor.so.VERSION, soname link
# libanchor.so.MAJOR, dev link libanchor.so), the headers, anchor.pc, the
# CLI, man pages, the emulated sensor `record` uses on machines without one,
# and the Python package in PREFIX/lib/anchor/python (a preloaded
# libanchor.so finds it there; anchor.pth in the build interpreter's
# site-packages under PREFIX adds it to sys.path when that directory is
# one Python reads, e.g. PREFIX = the interpreter's own prefix).
# `make uninstall` (same PREFIX/DESTDIR) removes exactly these.
D := $(DESTDIR)$(PREFIX)
PY_SITE := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_path("platlib",vars={"base":"$(PREFIX)","platbase":"$(PREFIX)"}))' 2>/dev/null)
install: all
	install -d $(D)/bin $(D)/lib/pkgconfig $(D)/include $(D)/share/man/man1 $(D)/share/man/man3 \
	  $(D)/lib/anchor/python $(D)/share/anchor $(D)/share/bash-completion/completions
	install -m 0755 $(B)/libanchor.so $(D)/lib/libanchor.so.$(VERSION)
	ln -sf libanchor.so.$(VERSION) $(D)/lib/libanchor.so.$(SOMAJOR)
	ln -sf libanchor.so.$(SOMAJOR) $(D)/lib/libanchor.so
	install -m 0644 include/anchor.h include/anchor_version.h $(D)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' preload/anchor.pc.in >$(D)/lib/pkgconfig/anchor.pc
	install -m 0755 $(B)/anchorpost $(D)/bin/anchorpost
	install -m 0644 $(B)/anchorpost.bash $(D)/share/bash-completion/completions/anchorpost
	sed 's|@VERSION@|$(VERSION)|' docs/man/anchorpost.1 >$(D)/share/man/man1/anchorpost.1
	sed 's|@VERSION@|$(VERSION)|' docs/man/libanchor.3 >$(D)/share/man/man3/libanchor.3
	cp -r $(B)/python/. $(D)/lib/anchor/python/
	cp -r tools/emulated_power $(D)/share/anchor/
	find $(D)/lib/anchor $(D)/share/anchor -name __pycache__ -prune -exec rm -rf {} +
	if [ -n "$(PY_SITE)" ]; then install -d $(DESTDIR)$(PY_SITE) && \
	  printf '%s\n' '$(PREFIX)/lib/anchor/python' 'import _anchor_autostart' >$(DESTDIR)$(PY_SITE)/anchor.pth; fi

uninstall:
	rm -f $(D)/lib/libanchor.so.$(VERSION) $(D)/lib/libanchor.so.$(SOMAJOR) $(D)/lib/libanchor.so \
	  $(D)/include/anchor.h $(D)/include/anchor_version.h $(D)/lib/pkgconfig/anchor.pc $(D)/bin/anchorpost \
	  $(D)/share/man/man1/anchorpost.1 $(D)/share/man/man3/libanchor.3 \
	  $(D)/share/bash-completion/completions/anchorpost
	if [ -n "$(PY_SITE)" ]; then rm -f $(DESTDIR)$(PY_SITE)/anchor.pth; fi
	rm -rf $(D)/lib/anchor $(D)/share/anchor
	@# A staging tree (DESTDIR) also loses the directories install made and
	@# left empty; a live prefix keeps its standard directories.
	if [ -n "$(DESTDIR)" ]; then for d in $(D)/bin $(D)/include $(D)/lib/pkgconfig $(D)/share/man/man1 \
	  $(D)/share/man/man3 $(D)/share/man $(D)/share/bash-completion/completions \
	  $(D)/share/bash-completion $(DESTDIR)$(PY_SITE) $(D)/share $(D)/lib; do \
	  [ -d "$$d" ] && find "$$d" -depth -type d -empty -delete; done; \
	  d=$(D); while [ "$$d" != "$(DESTDIR)" ] && rmdir "$$d" 2>/dev/null; do d=$${d%/*}; done; fi; true

clean:
	rm -rf $(B)

# ---- test victims and checkers (tests/victims/) ----
VICTIMS := $(B)/victims/marker $(B)/victims/ring_check $(B)/victims/lapped $(B)/victims/attach_cut
READER_SRC := anchors/ring_reader.c anchors/ring_clock.c anchors/ring_procs.c
all: $(VICTIMS)

$(B)/victims/marker: tests/victims/marker.c $(B)/libanchor.so include/anchor.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -pthread -o $@ $< -L$(B) -lanchor -Wl,-rpath,'$$ORIGIN/..'

# The ring writer with its test hook (a writer stalled between ticket and write).
$(B)/victims/lapped: tests/victims/lapped.c anchors/ring_writer.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -DANCHOR_TEST_HOOKS -pthread -o $@ $< anchors/ring_writer.c

# The ring writer with its test hook (the ring cut while a process attaches).
$(B)/victims/attach_cut: tests/victims/attach_cut.c anchors/ring_writer.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -DANCHOR_TEST_HOOKS -pthread -o $@ $< anchors/ring_writer.c

$(B)/victims/ring_check: tests/victims/ring_check.c $(READER_SRC) $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(READER_SRC)

# ---- synthetic rings (tests of multi-ring merging, bench/mpi_scale.sh) ----
all: $(B)/tools/ringgen
$(B)/tools/ringgen: tools/ringgen/ringgen.c anchors/ring_format.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< -lm

# py-spy placement over phase styles and py-spy modes (issue 21,
# BENCHMARKS.md section 15): 34 real recordings, a few minutes.
.PHONY: bench-placement
bench-placement: all
	$(PYTHON) bench/placement_suite.py

# Attribution accuracy against ground truth (real perun, emulated sensor);
# several minutes.  The test suite runs the --quick subset.
.PHONY: accuracy
accuracy: all
	$(PYTHON) bench/accuracy.py
