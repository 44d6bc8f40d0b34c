// Regions nested 400 deep (stablehlo.case in stablehlo.case …): the analysis recurses once per level, so
// it must stop with a clear error at Python's recursion limit, not an internal RecursionError.
func.func @main(%a: tensor<4xf32>, %i: tensor<i32>) -> tensor<4xf32> {
%r0 = "stablehlo.case"(%i) ({
%r1 = "stablehlo.case"(%i) ({
%r2 = "stablehlo.case"(%i) ({
%r3 = "stablehlo.case"(%i) ({
%r4 = "stablehlo.case"(%i) ({
%r5 = "stablehlo.case"(%i) ({
%r6 = "stablehlo.case"(%i) ({
%r7 = "stablehlo.case"(%i) ({
%r8 = "stablehlo.case"(%i) ({
%r9 = "stablehlo.case"(%i) ({
%r10 = "stablehlo.case"(%i) ({
%r11 = "stablehlo.case"(%i) ({
%r12 = "stablehlo.case"(%i) ({
%r13 = "stablehlo.case"(%i) ({
%r14 = "stablehlo.case"(%i) ({
%r15 = "stablehlo.case"(%i) ({
%r16 = "stablehlo.case"(%i) ({
%r17 = "stablehlo.case"(%i) ({
%r18 = "stablehlo.case"(%i) ({
%r19 = "stablehlo.case"(%i) ({
%r20 = "stablehlo.case"(%i) ({
%r21 = "stablehlo.case"(%i) ({
%r22 = "stablehlo.case"(%i) ({
%r23 = "stablehlo.case"(%i) ({
%r24 = "stablehlo.case"(%i) ({
%r25 = "stablehlo.case"(%i) ({
%r26 = "stablehlo.case"(%i) ({
%r27 = "stablehlo.case"(%i) ({
%r28 = "stablehlo.case"(%i) ({
%r29 = "stablehlo.case"(%i) ({
%r30 = "stablehlo.case"(%i) ({
%r31 = "stablehlo.case"(%i) ({
%r32 = "stablehlo.case"(%i) ({
%r33 = "stablehlo.case"(%i) ({
%r34 = "stablehlo.case"(%i) ({
%r35 = "stablehlo.case"(%i) ({
%r36 = "stablehlo.case"(%i) ({
%r37 = "stablehlo.case"(%i) ({
%r38 = "stablehlo.case"(%i) ({
%r39 = "stablehlo.case"(%i) ({
%r40 = "stablehlo.case"(%i) ({
%r41 = "stablehlo.case"(%i) ({
%r42 = "stablehlo.case"(%i) ({
%r43 = "stablehlo.case"(%i) ({
%r44 = "stablehlo.case"(%i) ({
%r45 = "stablehlo.case"(%i) ({
%r46 = "stablehlo.case"(%i) ({
%r47 = "stablehlo.case"(%i) ({
%r48 = "stablehlo.case"(%i) ({
%r49 = "stablehlo.case"(%i) ({
%r50 = "stablehlo.case"(%i) ({
%r51 = "stablehlo.case"(%i) ({
%r52 = "stablehlo.case"(%i) ({
%r53 = "stablehlo.case"(%i) ({
%r54 = "stablehlo.case"(%i) ({
%r55 = "stablehlo.case"(%i) ({
%r56 = "stablehlo.case"(%i) ({
%r57 = "stablehlo.case"(%i) ({
%r58 = "stablehlo.case"(%i) ({
%r59 = "stablehlo.case"(%i) ({
%r60 = "stablehlo.case"(%i) ({
%r61 = "stablehlo.case"(%i) ({
%r62 = "stablehlo.case"(%i) ({
%r63 = "stablehlo.case"(%i) ({
%r64 = "stablehlo.case"(%i) ({
%r65 = "stablehlo.case"(%i) ({
%r66 = "stablehlo.case"(%i) ({
%r67 = "stablehlo.case"(%i) ({
%r68 = "stablehlo.case"(%i) ({
%r69 = "stablehlo.case"(%i) ({
%r70 = "stablehlo.case"(%i) ({
%r71 = "stablehlo.case"(%i) ({
%r72 = "stablehlo.case"(%i) ({
%r73 = "stablehlo.case"(%i) ({
%r74 = "stablehlo.case"(%i) ({
%r75 = "stablehlo.case"(%i) ({
%r76 = "stablehlo.case"(%i) ({
%r77 = "stablehlo.case"(%i) ({
%r78 = "stablehlo.case"(%i) ({
%r79 = "stablehlo.case"(%i) ({
%r80 = "stablehlo.case"(%i) ({
%r81 = "stablehlo.case"(%i) ({
%r82 = "stablehlo.case"(%i) ({
%r83 = "stablehlo.case"(%i) ({
%r84 = "stablehlo.case"(%i) ({
%r85 = "stablehlo.case"(%i) ({
%r86 = "stablehlo.case"(%i) ({
%r87 = "stablehlo.case"(%i) ({
%r88 = "stablehlo.case"(%i) ({
%r89 = "stablehlo.case"(%i) ({
%r90 = "stablehlo.case"(%i) ({
%r91 = "stablehlo.case"(%i) ({
%r92 = "stablehlo.case"(%i) ({
%r93 = "stablehlo.case"(%i) ({
%r94 = "stablehlo.case"(%i) ({
%r95 = "stablehlo.case"(%i) ({
%r96 = "stablehlo.case"(%i) ({
%r97 = "stablehlo.case"(%i) ({
%r98 = "stablehlo.case"(%i) ({
%r99 = "stablehlo.case"(%i) ({
%r100 = "stablehlo.case"(%i) ({
%r101 = "stablehlo.case"(%i) ({
%r102 = "stablehlo.case"(%i) ({
%r103 = "stablehlo.case"(%i) ({
%r104 = "stablehlo.case"(%i) ({
%r105 = "stablehlo.case"(%i) ({
%r106 = "stablehlo.case"(%i) ({
%r107 = "stablehlo.case"(%i) ({
%r108 = "stablehlo.case"(%i) ({
%r109 = "stablehlo.case"(%i) ({
%r110 = "stablehlo.case"(%i) ({
%r111 = "stablehlo.case"(%i) ({
%r112 = "stablehlo.case"(%i) ({
%r113 = "stablehlo.case"(%i) ({
%r114 = "stablehlo.case"(%i) ({
%r115 = "stablehlo.case"(%i) ({
%r116 = "stablehlo.case"(%i) ({
%r117 = "stablehlo.case"(%i) ({
%r118 = "stablehlo.case"(%i) ({
%r119 = "stablehlo.case"(%i) ({
%r120 = "stablehlo.case"(%i) ({
%r121 = "stablehlo.case"(%i) ({
%r122 = "stablehlo.case"(%i) ({
%r123 = "stablehlo.case"(%i) ({
%r124 = "stablehlo.case"(%i) ({
%r125 = "stablehlo.case"(%i) ({
%r126 = "stablehlo.case"(%i) ({
%r127 = "stablehlo.case"(%i) ({
%r128 = "stablehlo.case"(%i) ({
%r129 = "stablehlo.case"(%i) ({
%r130 = "stablehlo.case"(%i) ({
%r131 = "stablehlo.case"(%i) ({
%r132 = "stablehlo.case"(%i) ({
%r133 = "stablehlo.case"(%i) ({
%r134 = "stablehlo.case"(%i) ({
%r135 = "stablehlo.case"(%i) ({
%r136 = "stablehlo.case"(%i) ({
%r137 = "stablehlo.case"(%i) ({
%r138 = "stablehlo.case"(%i) ({
%r139 = "stablehlo.case"(%i) ({
%r140 = "stablehlo.case"(%i) ({
%r141 = "stablehlo.case"(%i) ({
%r142 = "stablehlo.case"(%i) ({
%r143 = "stablehlo.case"(%i) ({
%r144 = "stablehlo.case"(%i) ({
%r145 = "stablehlo.case"(%i) ({
%r146 = "stablehlo.case"(%i) ({
%r147 = "stablehlo.case"(%i) ({
%r148 = "stablehlo.case"(%i) ({
%r149 = "stablehlo.case"(%i) ({
%r150 = "stablehlo.case"(%i) ({
%r151 = "stablehlo.case"(%i) ({
%r152 = "stablehlo.case"(%i) ({
%r153 = "stablehlo.case"(%i) ({
%r154 = "stablehlo.case"(%i) ({
%r155 = "stablehlo.case"(%i) ({
%r156 = "stablehlo.case"(%i) ({
%r157 = "stablehlo.case"(%i) ({
%r158 = "stablehlo.case"(%i) ({
%r159 = "stablehlo.case"(%i) ({
%r160 = "stablehlo.case"(%i) ({
%r161 = "stablehlo.case"(%i) ({
%r162 = "stablehlo.case"(%i) ({
%r163 = "stablehlo.case"(%i) ({
%r164 = "stablehlo.case"(%i) ({
%r165 = "stablehlo.case"(%i) ({
%r166 = "stablehlo.case"(%i) ({
%r167 = "stablehlo.case"(%i) ({
%r168 = "stablehlo.case"(%i) ({
%r169 = "stablehlo.case"(%i) ({
%r170 = "stablehlo.case"(%i) ({
%r171 = "stablehlo.case"(%i) ({
%r172 = "stablehlo.case"(%i) ({
%r173 = "stablehlo.case"(%i) ({
%r174 = "stablehlo.case"(%i) ({
%r175 = "stablehlo.case"(%i) ({
%r176 = "stablehlo.case"(%i) ({
%r177 = "stablehlo.case"(%i) ({
%r178 = "stablehlo.case"(%i) ({
%r179 = "stablehlo.case"(%i) ({
%r180 = "stablehlo.case"(%i) ({
%r181 = "stablehlo.case"(%i) ({
%r182 = "stablehlo.case"(%i) ({
%r183 = "stablehlo.case"(%i) ({
%r184 = "stablehlo.case"(%i) ({
%r185 = "stablehlo.case"(%i) ({
%r186 = "stablehlo.case"(%i) ({
%r187 = "stablehlo.case"(%i) ({
%r188 = "stablehlo.case"(%i) ({
%r189 = "stablehlo.case"(%i) ({
%r190 = "stablehlo.case"(%i) ({
%r191 = "stablehlo.case"(%i) ({
%r192 = "stablehlo.case"(%i) ({
%r193 = "stablehlo.case"(%i) ({
%r194 = "stablehlo.case"(%i) ({
%r195 = "stablehlo.case"(%i) ({
%r196 = "stablehlo.case"(%i) ({
%r197 = "stablehlo.case"(%i) ({
%r198 = "stablehlo.case"(%i) ({
%r199 = "stablehlo.case"(%i) ({
%r200 = "stablehlo.case"(%i) ({
%r201 = "stablehlo.case"(%i) ({
%r202 = "stablehlo.case"(%i) ({
%r203 = "stablehlo.case"(%i) ({
%r204 = "stablehlo.case"(%i) ({
%r205 = "stablehlo.case"(%i) ({
%r206 = "stablehlo.case"(%i) ({
%r207 = "stablehlo.case"(%i) ({
%r208 = "stablehlo.case"(%i) ({
%r209 = "stablehlo.case"(%i) ({
%r210 = "stablehlo.case"(%i) ({
%r211 = "stablehlo.case"(%i) ({
%r212 = "stablehlo.case"(%i) ({
%r213 = "stablehlo.case"(%i) ({
%r214 = "stablehlo.case"(%i) ({
%r215 = "stablehlo.case"(%i) ({
%r216 = "stablehlo.case"(%i) ({
%r217 = "stablehlo.case"(%i) ({
%r218 = "stablehlo.case"(%i) ({
%r219 = "stablehlo.case"(%i) ({
%r220 = "stablehlo.case"(%i) ({
%r221 = "stablehlo.case"(%i) ({
%r222 = "stablehlo.case"(%i) ({
%r223 = "stablehlo.case"(%i) ({
%r224 = "stablehlo.case"(%i) ({
%r225 = "stablehlo.case"(%i) ({
%r226 = "stablehlo.case"(%i) ({
%r227 = "stablehlo.case"(%i) ({
%r228 = "stablehlo.case"(%i) ({
%r229 = "stablehlo.case"(%i) ({
%r230 = "stablehlo.case"(%i) ({
%r231 = "stablehlo.case"(%i) ({
%r232 = "stablehlo.case"(%i) ({
%r233 = "stablehlo.case"(%i) ({
%r234 = "stablehlo.case"(%i) ({
%r235 = "stablehlo.case"(%i) ({
%r236 = "stablehlo.case"(%i) ({
%r237 = "stablehlo.case"(%i) ({
%r238 = "stablehlo.case"(%i) ({
%r239 = "stablehlo.case"(%i) ({
%r240 = "stablehlo.case"(%i) ({
%r241 = "stablehlo.case"(%i) ({
%r242 = "stablehlo.case"(%i) ({
%r243 = "stablehlo.case"(%i) ({
%r244 = "stablehlo.case"(%i) ({
%r245 = "stablehlo.case"(%i) ({
%r246 = "stablehlo.case"(%i) ({
%r247 = "stablehlo.case"(%i) ({
%r248 = "stablehlo.case"(%i) ({
%r249 = "stablehlo.case"(%i) ({
%r250 = "stablehlo.case"(%i) ({
%r251 = "stablehlo.case"(%i) ({
%r252 = "stablehlo.case"(%i) ({
%r253 = "stablehlo.case"(%i) ({
%r254 = "stablehlo.case"(%i) ({
%r255 = "stablehlo.case"(%i) ({
%r256 = "stablehlo.case"(%i) ({
%r257 = "stablehlo.case"(%i) ({
%r258 = "stablehlo.case"(%i) ({
%r259 = "stablehlo.case"(%i) ({
%r260 = "stablehlo.case"(%i) ({
%r261 = "stablehlo.case"(%i) ({
%r262 = "stablehlo.case"(%i) ({
%r263 = "stablehlo.case"(%i) ({
%r264 = "stablehlo.case"(%i) ({
%r265 = "stablehlo.case"(%i) ({
%r266 = "stablehlo.case"(%i) ({
%r267 = "stablehlo.case"(%i) ({
%r268 = "stablehlo.case"(%i) ({
%r269 = "stablehlo.case"(%i) ({
%r270 = "stablehlo.case"(%i) ({
%r271 = "stablehlo.case"(%i) ({
%r272 = "stablehlo.case"(%i) ({
%r273 = "stablehlo.case"(%i) ({
%r274 = "stablehlo.case"(%i) ({
%r275 = "stablehlo.case"(%i) ({
%r276 = "stablehlo.case"(%i) ({
%r277 = "stablehlo.case"(%i) ({
%r278 = "stablehlo.case"(%i) ({
%r279 = "stablehlo.case"(%i) ({
%r280 = "stablehlo.case"(%i) ({
%r281 = "stablehlo.case"(%i) ({
%r282 = "stablehlo.case"(%i) ({
%r283 = "stablehlo.case"(%i) ({
%r284 = "stablehlo.case"(%i) ({
%r285 = "stablehlo.case"(%i) ({
%r286 = "stablehlo.case"(%i) ({
%r287 = "stablehlo.case"(%i) ({
%r288 = "stablehlo.case"(%i) ({
%r289 = "stablehlo.case"(%i) ({
%r290 = "stablehlo.case"(%i) ({
%r291 = "stablehlo.case"(%i) ({
%r292 = "stablehlo.case"(%i) ({
%r293 = "stablehlo.case"(%i) ({
%r294 = "stablehlo.case"(%i) ({
%r295 = "stablehlo.case"(%i) ({
%r296 = "stablehlo.case"(%i) ({
%r297 = "stablehlo.case"(%i) ({
%r298 = "stablehlo.case"(%i) ({
%r299 = "stablehlo.case"(%i) ({
%r300 = "stablehlo.case"(%i) ({
%r301 = "stablehlo.case"(%i) ({
%r302 = "stablehlo.case"(%i) ({
%r303 = "stablehlo.case"(%i) ({
%r304 = "stablehlo.case"(%i) ({
%r305 = "stablehlo.case"(%i) ({
%r306 = "stablehlo.case"(%i) ({
%r307 = "stablehlo.case"(%i) ({
%r308 = "stablehlo.case"(%i) ({
%r309 = "stablehlo.case"(%i) ({
%r310 = "stablehlo.case"(%i) ({
%r311 = "stablehlo.case"(%i) ({
%r312 = "stablehlo.case"(%i) ({
%r313 = "stablehlo.case"(%i) ({
%r314 = "stablehlo.case"(%i) ({
%r315 = "stablehlo.case"(%i) ({
%r316 = "stablehlo.case"(%i) ({
%r317 = "stablehlo.case"(%i) ({
%r318 = "stablehlo.case"(%i) ({
%r319 = "stablehlo.case"(%i) ({
%r320 = "stablehlo.case"(%i) ({
%r321 = "stablehlo.case"(%i) ({
%r322 = "stablehlo.case"(%i) ({
%r323 = "stablehlo.case"(%i) ({
%r324 = "stablehlo.case"(%i) ({
%r325 = "stablehlo.case"(%i) ({
%r326 = "stablehlo.case"(%i) ({
%r327 = "stablehlo.case"(%i) ({
%r328 = "stablehlo.case"(%i) ({
%r329 = "stablehlo.case"(%i) ({
%r330 = "stablehlo.case"(%i) ({
%r331 = "stablehlo.case"(%i) ({
%r332 = "stablehlo.case"(%i) ({
%r333 = "stablehlo.case"(%i) ({
%r334 = "stablehlo.case"(%i) ({
%r335 = "stablehlo.case"(%i) ({
%r336 = "stablehlo.case"(%i) ({
%r337 = "stablehlo.case"(%i) ({
%r338 = "stablehlo.case"(%i) ({
%r339 = "stablehlo.case"(%i) ({
%r340 = "stablehlo.case"(%i) ({
%r341 = "stablehlo.case"(%i) ({
%r342 = "stablehlo.case"(%i) ({
%r343 = "stablehlo.case"(%i) ({
%r344 = "stablehlo.case"(%i) ({
%r345 = "stablehlo.case"(%i) ({
%r346 = "stablehlo.case"(%i) ({
%r347 = "stablehlo.case"(%i) ({
%r348 = "stablehlo.case"(%i) ({
%r349 = "stablehlo.case"(%i) ({
%r350 = "stablehlo.case"(%i) ({
%r351 = "stablehlo.case"(%i) ({
%r352 = "stablehlo.case"(%i) ({
%r353 = "stablehlo.case"(%i) ({
%r354 = "stablehlo.case"(%i) ({
%r355 = "stablehlo.case"(%i) ({
%r356 = "stablehlo.case"(%i) ({
%r357 = "stablehlo.case"(%i) ({
%r358 = "stablehlo.case"(%i) ({
%r359 = "stablehlo.case"(%i) ({
%r360 = "stablehlo.case"(%i) ({
%r361 = "stablehlo.case"(%i) ({
%r362 = "stablehlo.case"(%i) ({
%r363 = "stablehlo.case"(%i) ({
%r364 = "stablehlo.case"(%i) ({
%r365 = "stablehlo.case"(%i) ({
%r366 = "stablehlo.case"(%i) ({
%r367 = "stablehlo.case"(%i) ({
%r368 = "stablehlo.case"(%i) ({
%r369 = "stablehlo.case"(%i) ({
%r370 = "stablehlo.case"(%i) ({
%r371 = "stablehlo.case"(%i) ({
%r372 = "stablehlo.case"(%i) ({
%r373 = "stablehlo.case"(%i) ({
%r374 = "stablehlo.case"(%i) ({
%r375 = "stablehlo.case"(%i) ({
%r376 = "stablehlo.case"(%i) ({
%r377 = "stablehlo.case"(%i) ({
%r378 = "stablehlo.case"(%i) ({
%r379 = "stablehlo.case"(%i) ({
%r380 = "stablehlo.case"(%i) ({
%r381 = "stablehlo.case"(%i) ({
%r382 = "stablehlo.case"(%i) ({
%r383 = "stablehlo.case"(%i) ({
%r384 = "stablehlo.case"(%i) ({
%r385 = "stablehlo.case"(%i) ({
%r386 = "stablehlo.case"(%i) ({
%r387 = "stablehlo.case"(%i) ({
%r388 = "stablehlo.case"(%i) ({
%r389 = "stablehlo.case"(%i) ({
%r390 = "stablehlo.case"(%i) ({
%r391 = "stablehlo.case"(%i) ({
%r392 = "stablehlo.case"(%i) ({
%r393 = "stablehlo.case"(%i) ({
%r394 = "stablehlo.case"(%i) ({
%r395 = "stablehlo.case"(%i) ({
%r396 = "stablehlo.case"(%i) ({
%r397 = "stablehlo.case"(%i) ({
%r398 = "stablehlo.case"(%i) ({
%r399 = "stablehlo.case"(%i) ({
%s = stablehlo.sine %a : tensor<4xf32>
stablehlo.return %s : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r399 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r398 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r397 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r396 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r395 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r394 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r393 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r392 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r391 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r390 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r389 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r388 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r387 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r386 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r385 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r384 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r383 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r382 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r381 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r380 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r379 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r378 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r377 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r376 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r375 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r374 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r373 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r372 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r371 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r370 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r369 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r368 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r367 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r366 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r365 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r364 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r363 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r362 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r361 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r360 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r359 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r358 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r357 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r356 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r355 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r354 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r353 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r352 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r351 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r350 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r349 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r348 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r347 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r346 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r345 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r344 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r343 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r342 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r341 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r340 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r339 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r338 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r337 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r336 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r335 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r334 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r333 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r332 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r331 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r330 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r329 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r328 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r327 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r326 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r325 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r324 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r323 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r322 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r321 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r320 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r319 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r318 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r317 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r316 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r315 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r314 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r313 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r312 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r311 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r310 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r309 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r308 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r307 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r306 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r305 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r304 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r303 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r302 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r301 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r300 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r299 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r298 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r297 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r296 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r295 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r294 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r293 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r292 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r291 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r290 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r289 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r288 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r287 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r286 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r285 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r284 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r283 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r282 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r281 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r280 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r279 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r278 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r277 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r276 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r275 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r274 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r273 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r272 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r271 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r270 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r269 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r268 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r267 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r266 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r265 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r264 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r263 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r262 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r261 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r260 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r259 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r258 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r257 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r256 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r255 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r254 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r253 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r252 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r251 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r250 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r249 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r248 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r247 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r246 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r245 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r244 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r243 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r242 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r241 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r240 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r239 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r238 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r237 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r236 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r235 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r234 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r233 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r232 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r231 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r230 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r229 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r228 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r227 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r226 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r225 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r224 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r223 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r222 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r221 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r220 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r219 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r218 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r217 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r216 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r215 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r214 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r213 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r212 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r211 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r210 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r209 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r208 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r207 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r206 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r205 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r204 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r203 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r202 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r201 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r200 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r199 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r198 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r197 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r196 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r195 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r194 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r193 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r192 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r191 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r190 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r189 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r188 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r187 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r186 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r185 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r184 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r183 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r182 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r181 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r180 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r179 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r178 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r177 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r176 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r175 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r174 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r173 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r172 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r171 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r170 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r169 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r168 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r167 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r166 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r165 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r164 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r163 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r162 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r161 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r160 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r159 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r158 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r157 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r156 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r155 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r154 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r153 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r152 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r151 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r150 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r149 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r148 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r147 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r146 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r145 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r144 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r143 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r142 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r141 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r140 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r139 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r138 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r137 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r136 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r135 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r134 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r133 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r132 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r131 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r130 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r129 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r128 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r127 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r126 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r125 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r124 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r123 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r122 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r121 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r120 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r119 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r118 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r117 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r116 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r115 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r114 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r113 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r112 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r111 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r110 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r109 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r108 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r107 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r106 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r105 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r104 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r103 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r102 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r101 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r100 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r99 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r98 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r97 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r96 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r95 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r94 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r93 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r92 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r91 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r90 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r89 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r88 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r87 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r86 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r85 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r84 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r83 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r82 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r81 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r80 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r79 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r78 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r77 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r76 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r75 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r74 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r73 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r72 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r71 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r70 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r69 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r68 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r67 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r66 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r65 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r64 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r63 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r62 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r61 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r60 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r59 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r58 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r57 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r56 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r55 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r54 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r53 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r52 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r51 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r50 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r49 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r48 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r47 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r46 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r45 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r44 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r43 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r42 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r41 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r40 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r39 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r38 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r37 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r36 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r35 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r34 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r33 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r32 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r31 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r30 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r29 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r28 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r27 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r26 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r25 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r24 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r23 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r22 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r21 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r20 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r19 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r18 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r17 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r16 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r15 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r14 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r13 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r12 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r11 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r10 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r9 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r8 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r7 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r6 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r5 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r4 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r3 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r2 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
stablehlo.return %r1 : tensor<4xf32>
}) : (tensor<i32>) -> tensor<4xf32>
  return %r0 : tensor<4xf32>
}
