module zonostream

go 1.26
