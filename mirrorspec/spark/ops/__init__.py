"""Operations on mirrored tables: `datatests`, `reconcile`, `replay`, `maintain`, `inspect`
(the Spark fallback of show/history) and `cds_training` (the class-data archive's training pass,
which drives the publisher and the engine). May import `mirror`, `publish` and `platform`."""
