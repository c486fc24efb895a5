" Vim syntax file
" Language:    Pipe (pipec ML input pipeline specs, *.pipe)
" Maintainer:  pipec (grammar/vim/syntax/pipe.vim)
"
" The word lists mirror grammar/pipe.tmLanguage.json; tests/unit/syntax_files_test.cpp checks that both
" name every keyword of grammar/Pipe.g4, every dtype and every builtin in the registry.

if exists("b:current_syntax")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
syn iskeyword @,48-57,_

" Comments and strings
syn keyword pipeTodo contained TODO FIXME XXX NOTE
syn match   pipeComment "#.*$" contains=pipeTodo,@Spell
syn match   pipeEscape  contained "\\."
syn region  pipeString  start=+"+ skip=+\\.+ end=+"+ end=+$+ contains=pipeEscape,@Spell

" Numbers: 10_000, 0x1F, 0b1010, 0.5, 1e-3, 2.5e+4
syn match   pipeNumber "\<0x[0-9a-fA-F_]\+\>"
syn match   pipeNumber "\<0b[01_]\+\>"
syn match   pipeNumber "\<\d[0-9_]*\>"
syn match   pipeFloat  "\<\d[0-9_]*\.\d[0-9_]*\([eE][+-]\=\d\+\)\=\>"
syn match   pipeFloat  "\<\d[0-9_]*[eE][+-]\=\d\+\>"

" Declaration keywords are contextual: keywords only at the start of a top-level line.
syn match   pipeDeclaration "^\(import\|const\|fn\|source\|pipeline\|model\|train\)\>"
syn keyword pipeBoolean true false

" Element dtypes
syn keyword pipeType bool u8 i8 u16 i16 u32 i32 u64 i64 f16 bf16 f32 f64 bytes

" Dataset stages and sinks
syn keyword pipeStage map filter batch padded_batch window rebatch scan bucket_by_length group_by_window rejection_resample pack unbatch
syn keyword pipeStage shuffle repeat take skip shard cache
syn keyword pipeStage prefetch ignore_errors interleave flat_map enumerate to write

" Dataset sources and output formats
syn keyword pipeSource tfrecord files list_files range csv npy text_lines fixed_length_records zip concatenate
syn keyword pipeSource choose_from sample_from

" Tensor ops
syn keyword pipeOp abs sign neg tanh exp log log1p sqrt rsqrt sin cos floor ceil round sigmoid relu
syn keyword pipeOp square max min pow atan2 bit_or bit_and bit_xor where clip unpack_bits pack_bits
syn keyword pipeOp reshape stack concat transpose expand_dims squeeze one_hot sum mean prod
syn keyword pipeOp reduce_max reduce_min argmax random_uniform random_normal random_int size
syn keyword pipeOp read_file decode_jpeg decode_png decode_image encode_png encode_jpeg random_crop crop_or_pad resize
syn keyword pipeOp flip_left_right flip_up_down random_flip_left_right random_flip_up_down
syn keyword pipeOp central_crop convert_image_dtype normalize rgb_to_grayscale distance_transform
syn keyword pipeOp one_hot_colors strip split to_number

" Model layers
syn keyword pipeLayer conv2d conv2d_transpose max_pool2d avg_pool2d upsample2d global_avg_pool
syn keyword pipeLayer global_max_pool dense flatten concat relu leaky_relu tanh sigmoid gelu softmax
syn keyword pipeLayer batch_norm layer_norm dropout embedding add

" Losses, optimizers and strategies
syn keyword pipeTrain mse mae cross_entropy binary_cross_entropy huber adam adamw sgd single
syn keyword pipeTrain mirrored multi_worker cosine_decay linear_warmup exponential_decay

" Bare option words
syn keyword pipeOption auto memory gpu cpu none gzip zlib same valid all bilinear nearest fp32 mixed_fp16
syn keyword pipeOption mixed_bf16

" Operators: the pipe first, so that `||` is not two pipes
syn match   pipeOperator "=>\|->\|==\|!=\|<=\|>=\|<<\|>>\|&&\|\*\*\|//\|[-+*/%<>!~^&=?]"
syn match   pipeOperator "||"
syn match   pipePipe     "|\@<!|\ze[^|]"
syn match   pipePipe     "|\@<!|$"

hi def link pipeTodo        Todo
hi def link pipeComment     Comment
hi def link pipeEscape      SpecialChar
hi def link pipeString      String
hi def link pipeNumber      Number
hi def link pipeFloat       Float
hi def link pipeDeclaration Keyword
hi def link pipeBoolean     Boolean
hi def link pipeType        Type
hi def link pipeStage       Function
hi def link pipeSource      Function
hi def link pipeOp          Function
hi def link pipeLayer       Function
hi def link pipeTrain       Function
hi def link pipeOption      Constant
hi def link pipeOperator    Operator
hi def link pipePipe        Statement

let b:current_syntax = "pipe"

let &cpo = s:cpo_save
unlet s:cpo_save
