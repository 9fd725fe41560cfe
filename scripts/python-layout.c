/* Prints, as "name value" lines, what memshim's Python-frames layout (shim/src/python/layout.rs)
 * says about one CPython 3.13 or 3.14, read from that interpreter's own headers: the shim's unit
 * test `layout_probe` compiles this against each such interpreter it finds and compares.
 *
 * cc -DPy_BUILD_CORE -I$INC -I$INC/internal scripts/python-layout.c (INC: sysconfig's include).
 * Only offsetof, sizeof and bit-field probes on local structs: nothing links against libpython. */
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030e0000
#include "internal/pycore_debug_offsets.h"
#include "internal/pycore_interpframe_structs.h"
#include "internal/pycore_runtime_structs.h"
#include "internal/pycore_stackref.h"
#define EXECUTABLE f_executable
#define ENTRY_OWNER FRAME_OWNED_BY_INTERPRETER
#else
#include "internal/pycore_frame.h"
#include "internal/pycore_runtime.h"
#define EXECUTABLE f_executable
#define ENTRY_OWNER FRAME_OWNED_BY_CSTACK
#endif

#define P(name, value) printf("%s %lld\n", name, (long long)(value))
#define DBG(name, field) P("debug." name, offsetof(_Py_DebugOffsets, field))

/* Which bits of the 32-bit word at PyASCIIObject.state a bit-field of `state` occupies. */
static unsigned state_bits(void (*set)(PyASCIIObject *)) {
    PyASCIIObject o;
    unsigned word;
    memset(&o, 0, sizeof o);
    set(&o);
    memcpy(&word, (char *)&o + offsetof(PyASCIIObject, state), sizeof word);
    return word;
}
static void set_kind(PyASCIIObject *o) { o->state.kind = 7; }
static void set_compact(PyASCIIObject *o) { o->state.compact = 1; }
static void set_ascii(PyASCIIObject *o) { o->state.ascii = 1; }

int main(void) {
    P("minor", PY_MINOR_VERSION);
#ifdef Py_GIL_DISABLED
    P("free_threaded", 1);
#else
    P("free_threaded", 0);
#endif
#ifdef Py_DEBUG
    P("debug_build", 1);
#else
    P("debug_build", 0);
#endif
    P("tstate_frame", offsetof(PyThreadState, current_frame));
    P("tstate_next", offsetof(PyThreadState, next));
    P("frame_code", offsetof(_PyInterpreterFrame, EXECUTABLE));
    P("frame_previous", offsetof(_PyInterpreterFrame, previous));
    P("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
    P("frame_owner", offsetof(_PyInterpreterFrame, owner));
    P("frame_owner_size", sizeof(((_PyInterpreterFrame *)0)->owner));
    P("entry_owner", ENTRY_OWNER);
#if PY_VERSION_HEX >= 0x030e0000
    /* The low bits of a _PyStackRef that are tags, not address. */
    P("frame_code_tags", Py_TAG_BITS);
    P("frame_code_size", sizeof(_PyStackRef));
#else
    P("frame_code_tags", 0);
    P("frame_code_size", sizeof(PyObject *));
#endif
    P("code_filename", offsetof(PyCodeObject, co_filename));
    P("code_name", offsetof(PyCodeObject, co_qualname));
    P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
    P("code_linetable", offsetof(PyCodeObject, co_linetable));
    P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
    P("ascii_size", sizeof(PyASCIIObject));
    P("compact_size", sizeof(PyCompactUnicodeObject));
    P("ob_type", offsetof(PyObject, ob_type));
    P("str_length", offsetof(PyASCIIObject, length));
    P("str_state", offsetof(PyASCIIObject, state));
    P("str_kind_mask", state_bits(set_kind));
    P("str_compact_mask", state_bits(set_compact));
    P("str_ascii_mask", state_bits(set_ascii));
    P("bytes_size", offsetof(PyVarObject, ob_size));
    P("bytes_data", offsetof(PyBytesObject, ob_sval));
    /* Where the interpreter's own copy of these offsets lies in _PyRuntime. */
    P("debug.runtime", offsetof(_PyRuntimeState, debug_offsets));
    P("debug.cookie_size", sizeof(((_Py_DebugOffsets *)0)->cookie));
    DBG("version", version);
    DBG("free_threaded", free_threaded);
    DBG("tstate_frame", thread_state.current_frame);
    DBG("tstate_next", thread_state.next);
    DBG("frame_previous", interpreter_frame.previous);
    DBG("frame_code", interpreter_frame.executable);
    DBG("frame_instr", interpreter_frame.instr_ptr);
    DBG("frame_owner", interpreter_frame.owner);
    DBG("code_filename", code_object.filename);
    DBG("code_name", code_object.qualname);
    DBG("code_firstlineno", code_object.firstlineno);
    DBG("code_linetable", code_object.linetable);
    DBG("code_adaptive", code_object.co_code_adaptive);
    DBG("ob_type", pyobject.ob_type);
    DBG("str_length", unicode_object.length);
    DBG("str_state", unicode_object.state);
    DBG("ascii_size", unicode_object.asciiobject_size);
    DBG("bytes_size", bytes_object.ob_size);
    DBG("bytes_data", bytes_object.ob_sval);
    return 0;
}
