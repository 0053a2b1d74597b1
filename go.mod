module github.com/egress-proxies/egress

go 1.26.8

require github.com/google/go-cmp v0.7.0
