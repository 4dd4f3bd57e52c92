"""Training credit methods and what they share.

`base` is the seam the training graph calls (`CreditMethod`, `BaseCreditMethod`), `registry`
the built-in methods (`grse`, `maskills`) and `TrainConfig`'s method section; `plan` the plan
contract every method produces and the operators consume; `operators` the evolution operators,
`utility` the utility-update rules and `gate` the per-agent validation gate (docs/METHODS.md).
"""
