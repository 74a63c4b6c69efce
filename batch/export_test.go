package batch

// Unexported functions the external tests reach.
var (
	ParseHead     = parseHead
	ReadPriorFile = readPriorFile
)

var ShardOf = shardOf
