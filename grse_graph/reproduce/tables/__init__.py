"""One definition per paper table: the runs it needs (`plan`) and how its table is built from
their outcomes (`build`). `TABLES` is the registry the scripts and `grse reproduce` read."""
