// Package smallfs gives tests a small real filesystem to fill: a tmpfs
// mounted on a temporary directory (Linux only), and a way to fill it
// until writes fail with ENOSPC. The ledger's and the relay's disk-full
// tests share it.
package smallfs
