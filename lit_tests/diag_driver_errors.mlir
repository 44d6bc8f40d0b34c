// Driver-level errors: input files, entry functions, pipelines and options.  All go to stderr with exit
// code 1 and no Python traceback.

// RUN: not stablehlo-sparsity-opt %t.does_not_exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: does_not_exist.mlir: error: could not open input file: No such file or directory
// MISSING-NOT: Traceback

// RUN: not stablehlo-sparsity-opt %S/Inputs/latin1.mlir 2>&1 | filecheck %s --check-prefix=UTF8
// UTF8: latin1.mlir:2:9: error: input is not valid UTF-8 (byte 0xe9)

// RUN: not stablehlo-sparsity-opt %s --sparsity-annotate --entry=nope 2>&1 | filecheck %s --check-prefix=ENTRY
// ENTRY: diag_driver_errors.mlir:{{[0-9]+}}:1: error: no entry function '@nope' in the module (functions: @f, @g)

// RUN: not stablehlo-sparsity-opt %s --emit=pattern 2>&1 | filecheck %s --check-prefix=AMBIGUOUS
// AMBIGUOUS: error: cannot choose an entry function among 2 public functions (@f, @g); name one with entry=NAME (--entry=NAME)

// RUN: not stablehlo-sparsity-opt %s --sparsity-annotate --entry=f --wrt=3 2>&1 | filecheck %s --check-prefix=WRT
// WRT: error: argument index 3 out of range: @f has 1 arguments

// RUN: not stablehlo-sparsity-opt %s --no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// PASS: stablehlo-sparsity-opt: error: unknown command line option or pass '--no-such-pass'

// RUN: not stablehlo-sparsity-opt %s --sparsity-annotate=max-elemnts=3 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: stablehlo-sparsity-opt: error: unknown option 'max-elemnts' for pass 'sparsity-annotate' (options: entry, wrt, on-unknown, max-elements, max-nnz)

// RUN: not stablehlo-sparsity-opt %s --pass-pipeline='builtin.module(func.func(sparsity-annotate))' 2>&1 | filecheck %s --check-prefix=NESTED
// NESTED: error: pass 'sparsity-annotate' works on the whole module and cannot be nested in 'func.func(...)'

// RUN: not stablehlo-sparsity-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | filecheck %s --check-prefix=UNBALANCED
// UNBALANCED: error: unbalanced brackets in pass pipeline

// RUN: not stablehlo-sparsity-opt %s --emit=svg 2>&1 | filecheck %s --check-prefix=EMIT
// EMIT: error: argument --emit: invalid choice: 'svg'

// RUN: stablehlo-sparsity-opt --version | filecheck %s --check-prefix=VERSION
// VERSION: stablehlo-sparsity-opt (stablehlo_sparsity {{[0-9.]+}}, jaxlib {{[0-9.]+}})

func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}
func.func @g(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}
