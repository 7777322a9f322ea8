"""Remember which Java names py4j has resolved, for the local SparkSession.

py4j asks the JVM anew for every segment of every name on each use: `F.col` resolves
`functions`, `spark._jvm.org.apache.iceberg.spark.Spark3Util` resolves `org`,
`org.apache`, ... one round trip each, and each segment that is not a class is a failed
`Class.forName` that probes all 252 jars on Spark's class path, once per star import of
PySpark's JVM view; a class's static method is one more round trip. A job calls these
thousands of times (15,000 in two of the job's test files): `F.col` took 1.2 ms,
`Spark3Util` 1.5 ms. Remembered, each is a dict lookup.

Only packages, classes and static methods are remembered (a static field's value is read
anew), and a name that resolved stays what it was as long as no jar is added to the
running JVM (local mode adds its jars at start-up only).
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JavaPackage, JVMView


def _remembered(found: Any, memo: dict[str, Any], name: str) -> Any:
    if isinstance(found, JavaPackage):
        found.__class__ = _RememberingPackage
        memo[name] = found
    elif isinstance(found, JavaClass):
        found.__class__ = _RememberingClass
        memo[name] = found
    elif isinstance(found, JavaMember):  # a static method: a name, not a value
        memo[name] = found
    return found  # a static field's value is read anew each time


class _Remembering:
    """What a name below this package, class or view resolved to, asked of the JVM once."""

    def __getattr__(self, name: str) -> Any:
        memo = self.__dict__.setdefault("_wap_memo", {})
        if name in memo:
            return memo[name]
        return _remembered(super().__getattr__(name), memo, name)  # type: ignore[misc]


class _RememberingClass(_Remembering, JavaClass):
    pass


class _RememberingPackage(_Remembering, JavaPackage):
    pass


class _RememberingView(_Remembering, JVMView):
    pass


def remember_jvm_names(jvm: JVMView) -> None:
    """Make `jvm` (PySpark's `SparkContext._jvm`, shared by every use) remember what its
    names resolve to. Idempotent."""
    if type(jvm) is JVMView:
        jvm.__class__ = _RememberingView
