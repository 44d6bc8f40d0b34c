// A builtin scalar (not a tensor) argument.
func.func @main(%a: f32) -> f32 {
  return %a : f32
}
