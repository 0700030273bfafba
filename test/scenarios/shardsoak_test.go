package scenarios

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// The seeded soak in shard mode: N = 8 shards over 3 workers (2 to 4 live as
// members join and leave) under the soak's random fault mix, judged by Check
// and CheckShards. Only under `make chaos` ($BLOBLEADER_CHAOS_DURATION), so
// `make test` does not grow by another minute.
func TestShards_SeededSoak(t *testing.T) {
	if os.Getenv(EnvDuration) == "" {
		t.Skip("the shard soak runs under make chaos: set " + EnvDuration)
	}
	t.Parallel()
	soak := SoakFromEnv(t, 60*time.Second)
	cfg := ShardSoakConfig{Shards: 8, Workers: 3, MinLive: 2, MaxLive: 4}
	retryInconclusive(t, func(t *testing.T) {
		c := Local(t, cfg.Workers, cluster.Args("--shards", fmt.Sprint(cfg.Shards)))
		res, sres := ShardSoak(t, c, soak, cfg, reportName(t))
		judged(t, "election and shards", checker.Compose(res.Verdict, sres.Verdict))
	})
}
