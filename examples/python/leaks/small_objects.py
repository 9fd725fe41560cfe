"""Small objects: 1000 bytes objects of 200 bytes from one line (line 11), all live at the end.

CPython serves objects of 512 bytes or less from pymalloc's arenas, so memshim sees the arenas (mappings)
rather than the objects, unless the run sets PYTHONMALLOC=malloc (`memshim run --python-malloc`): then
each object is a malloc of 233 bytes (a 33-byte header and the 200 bytes) with this line as its site."""
import os


def small_objects(held):
    for i in range(len(held)):
        held[i] = bytes(200)


held = [None] * 1000
small_objects(held)
os._exit(0)
