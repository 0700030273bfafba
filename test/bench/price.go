package bench

import "strings"

// Price is what the doc's cost estimate assumes, with its source. The only
// prices found from this machine are Microsoft's *sample* prices (they call
// them fictitious examples); the official price list could not be fetched.
// Every monthly figure in the doc is therefore an estimate and says so.
var Price = struct {
	OtherPer10k, WritePer10k, ReadPer10k, ListPer10k float64
	HoursPerMonth                                    float64
	Source, CategorySource, Retrieved                string
}{
	OtherPer10k: 0.0044, WritePer10k: 0.055, ReadPer10k: 0.0044, ListPer10k: 0.055,
	HoursPerMonth: 730, // Azure bills a month as 730 hours
	Source: `Microsoft Learn, "Estimate the cost of using Azure Blob Storage", section "Sample prices", hot tier, ` +
		`Blob Service endpoint (ms.date 2024-07-26; MicrosoftDocs/azure-docs articles/storage/blobs/blob-storage-estimate-costs.md, ` +
		`commit 01d61bc5): write $0.055, read $0.0044, list and container $0.055, all other operations $0.0044 per 10,000. ` +
		`Microsoft labels these sample (fictitious) prices; the official list is https://azure.microsoft.com/pricing/details/storage/blobs/.`,
	CategorySource: `Microsoft Learn, "Map each REST operation to a price" (ms.date 2025-05-14; MicrosoftDocs/azure-docs ` +
		`articles/storage/blobs/map-rest-apis-transaction-categories.md, commit 1cf63eff): on standard general-purpose v2, ` +
		`Acquire/Renew/Release/Break Blob Lease, Get Blob Properties and Set Blob Metadata are "Other"; Put Blob, Append Block ` +
		`and Append Blob Seal are "Write"; Get Blob is "Read"; Create Container and List Blobs are "List and create container".`,
	Retrieved: "2026-11-21",
}

// Category maps a blobleader_storage_requests_total op to its GPv2 billing
// category. member_gc (--shards) is a Delete Blob, free on GPv2; it is left
// in "other", so the estimate errs high.
func Category(op string) string {
	switch op {
	case "acquire", "renew", "release", "break", "get", "update", "ledger_fence", "ledger_get":
		return "other"
	case "create_container", "ledger_list", "pool_list":
		return "list"
	}
	// --shards documents (worker/shard/fenced.go, report.go, view.go):
	// <doc>_read is a Get Blob, <doc>_write a Put Blob, <doc>_list a List
	// Blobs; <doc>_get (Get Blob Properties) and member_gc fall to "other".
	switch {
	case strings.HasSuffix(op, "_read"):
		return "read"
	case strings.HasSuffix(op, "_write"):
		return "write"
	case strings.HasSuffix(op, "_list"):
		return "list"
	}
	if strings.HasPrefix(op, "create_") || strings.HasPrefix(op, "ledger_") || strings.HasPrefix(op, "history_") {
		return "write"
	}
	return "other"
}

// MonthlyUSD estimates the monthly price of ops per hour by op.
func MonthlyUSD(opsPerHour map[string]float64, only func(op string) bool) float64 {
	var usd float64
	for op, v := range opsPerHour {
		if only != nil && !only(op) {
			continue
		}
		var p float64
		switch Category(op) {
		case "write":
			p = Price.WritePer10k
		case "read":
			p = Price.ReadPer10k
		case "list":
			p = Price.ListPer10k
		default:
			p = Price.OtherPer10k
		}
		usd += v * Price.HoursPerMonth / 10000 * p
	}
	return usd
}
