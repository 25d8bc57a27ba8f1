package main

import "syscall"

// armParentDeathSignal asks the kernel for SIGTERM when the parent exits
// (prctl PR_SET_PDEATHSIG), which main turns into a clean shutdown.
func armParentDeathSignal() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0); errno != 0 {
		return errno
	}
	return nil
}
