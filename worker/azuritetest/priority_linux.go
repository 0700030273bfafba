package azuritetest

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// priority is the nice value a server started here runs at, where the
// process starting it may raise a priority (root, or CAP_SYS_NICE).
// Azurite stands in for a storage service that in Azure runs on machines of
// its own. On a busy test machine its one Node thread is otherwise starved
// before the code under test is (a CI run beside stress-ng: a storage
// stall of 37 s in a 52 s window, every member of a pool waiting on it),
// and the run proves nothing about that code. The code under test keeps
// the machine's ordinary priority; whatever storage stall remains, the
// storage probe measures (stalltest).
const priority = -10

// prioritize gives every thread of process pid the priority. Threads that
// pid starts later inherit it from the thread that starts them, so it is
// called once at the start and again when the server is ready. Without the
// privilege it does nothing (the server runs at the ordinary priority).
func prioritize(pid int) {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, priority); errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			return
		}
	}
}
