"""What ``solar bound`` does with the programs that are not problem files: models by name
(``hf:ID``, :mod:`solar.cli.targets.hub`) and FlashInfer-Trace definition files
(:mod:`solar.cli.targets.definitions`): their options, the library calls they make
(:mod:`solar.hub`, :mod:`solar.definition`) and, for definitions, the process's collector."""
