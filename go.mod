module github.com/weirstream/weir

go 1.26.8
