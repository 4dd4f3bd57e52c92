"""Credit and evolution methods: `grse` (critic, checks, aggregation), the shared `operators`
and the validation `gate`."""
