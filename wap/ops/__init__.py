"""Operations on the WAP service (runs, branches, show, publish, discard, ingest) over a
`Backend`: the local embedded stack or a deployed AWS stack. The `wap` CLI and a
dashboard call the same functions (`wap.ops.operations`)."""
