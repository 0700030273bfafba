//go:build azure

package azure

import (
	"math"
	"time"
)

// Rates used for the cost estimate of one suite run. Every one is an
// estimate quoted, with its source and date, in docs/deploy.md ("Costs"):
// the official pricing pages were not reachable where this was written.
// Check them (Azure Retail Prices API) before relying on the figure.
const (
	rateACIvCPUSecond = 0.0000125 // USD per vCPU-second, US East
	rateACIGBSecond   = 0.0000014 // USD per GB-second, US East
	rateStorageRun    = 0.10      // USD, upper bound for one run's storage operations (docs/testing-on-azure.md)
	rateLogsRun       = 0.05      // USD, upper bound for one run's Log Analytics ingestion
)

// registryPerDay is the container registry's daily rate by SKU (estimates).
var registryPerDay = map[string]float64{"Basic": 0.167, "Standard": 0.667, "Premium": 1.667}

// CostInputs describe one run's billed resources.
type CostInputs struct {
	Groups        int           // worker container groups
	WorkerCPU     float64       // vCPU requested by each worker container
	WorkerMemGB   float64       // GB requested by each worker container
	SidecarCPU    float64       // vCPU of each chaos sidecar container
	SidecarMemGB  float64       // GB of each chaos sidecar container
	GroupsRunning time.Duration // how long the groups existed (ACI bills requested resources while a group runs)
	RegistrySKU   string        // Basic, Standard or Premium
	Deployed      time.Duration // how long the registry existed (billed per started day)
}

// Cost is the estimate, in US dollars.
type Cost struct {
	ACI      float64 `json:"aci_usd"`
	Registry float64 `json:"registry_usd"`
	Storage  float64 `json:"storage_usd_max"`
	Logs     float64 `json:"logs_usd_max"`
	Total    float64 `json:"total_usd"`
	Basis    string  `json:"basis"`
}

// DefaultCostInputs are the suite's deployment (deploy.go): 0.8 vCPU /
// 0.7 GB workers and 0.2 vCPU / 0.3 GB sidecars, ACI's minimum of 1 vCPU
// and 1 GB per group, and a Premium registry.
func DefaultCostInputs(groups int) CostInputs {
	return CostInputs{Groups: groups, WorkerCPU: suiteWorkerCPU, WorkerMemGB: suiteWorkerMemGB, SidecarCPU: suiteSidecarCPU,
		SidecarMemGB: suiteSidecarMemGB, RegistrySKU: "Premium"}
}

// EstimateCost estimates one run from its durations and the rates above.
func EstimateCost(in CostInputs) Cost {
	c := Cost{
		ACI:     aciCost(in, in.GroupsRunning),
		Storage: rateStorageRun,
		Logs:    rateLogsRun,
		Basis:   "estimated rates from docs/deploy.md (Costs), US East, pay-as-you-go; not a bill",
	}
	days := math.Max(1, math.Ceil(in.Deployed.Hours()/24))
	c.Registry = days * registryPerDay[in.RegistrySKU]
	c.Total = c.ACI + c.Registry + c.Storage + c.Logs
	for _, p := range []*float64{&c.ACI, &c.Registry, &c.Storage, &c.Logs, &c.Total} {
		*p = math.Round(*p*100) / 100
	}
	return c
}

// aciCost is the ACI part for groups running d.
func aciCost(in CostInputs, d time.Duration) float64 {
	return float64(in.Groups) * d.Seconds() * ((in.WorkerCPU+in.SidecarCPU)*rateACIvCPUSecond + (in.WorkerMemGB+in.SidecarMemGB)*rateACIGBSecond)
}
