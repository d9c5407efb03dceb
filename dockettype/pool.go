package dockettype

// Pool names a worker pool. Online execution and offline evaluation run on
// separate pools with their own workers and admission capacity.
type Pool string

const (
	PoolOnline  Pool = "online"
	PoolOffline Pool = "offline"
)

// Pools lists every pool.
var Pools = []Pool{PoolOnline, PoolOffline}

// Valid reports whether p is a known pool.
func (p Pool) Valid() bool { return p == PoolOnline || p == PoolOffline }
