module highwater/protocol

go 1.22
