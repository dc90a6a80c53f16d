module highwater/bench

go 1.22
