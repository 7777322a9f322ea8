"""Reading Java collections through py4j without iterating them to their end.

A Python `for` over a Java collection ends when the JVM throws NoSuchElementException,
and PySpark's py4j error hook converts every Java exception before py4j can swallow
it: a dozen round trips, about 15 ms each time. Asking for the size first costs one
call and throws nothing.
"""

from __future__ import annotations

from typing import Any


def java_list(items) -> list:
    """The elements of a `java.util.List` (or a py4j JavaArray) as a Python list."""
    if hasattr(items, "size"):
        return [items.get(index) for index in range(items.size())]
    return [items[index] for index in range(len(items))]


def java_iterable(items) -> list:
    """The elements of any `java.lang.Iterable` (e.g. Iceberg's `CloseableIterable`)."""
    iterator, found = items.iterator(), []
    while iterator.hasNext():
        found.append(iterator.next())
    return found


def java_map(mapping, keep=None) -> dict[Any, Any]:
    """A `java.util.Map` as a dict; `keep(key)` picks the keys to fetch values of."""
    keys = mapping.keySet().toArray()
    return {
        key: mapping.get(key)
        for key in (keys[index] for index in range(len(keys)))
        if keep is None or keep(key)
    }
