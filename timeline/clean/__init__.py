"""Cleaning with Apache Hudi's semantics (hudi-format.md §7): configuration, planner, executor.

The rule of this package: Cleanline never deletes a file that Apache Hudi would keep for the
same table and settings. Every decision follows a named Java method (CleanPlanner,
CleanerUtils, CleanPlanActionExecutor, CleanActionExecutor, HoodieFileGroup); the docstring of
the function that implements it names it. Where Cleanline deliberately keeps more than Hudi
(inputs of a pending clustering, the earlier of two hours cutoffs, re-validation right before
the first delete), the plan records the reason. Where Hudi's own result depends on something
Cleanline cannot know (the JVM time zone of another writer), the choice that deletes less is
taken and documented. tests/clean/test_hudi_agreement.py proves each rule on a hand-made
timeline; tests/KNOWN_DIFFERENCES.md lists the disagreements found and closed."""
