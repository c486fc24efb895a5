" Detect pipec specs (*.pipe). See docs/editors.md.
autocmd BufNewFile,BufRead *.pipe setfiletype pipe
