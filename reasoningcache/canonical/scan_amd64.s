//go:build amd64 && !purego

#include "textflag.h"

// Sixteen copies of '"', '\\' and 0x20.
DATA quotes<>+0(SB)/8, $0x2222222222222222
DATA quotes<>+8(SB)/8, $0x2222222222222222
GLOBL quotes<>(SB), RODATA|NOPTR, $16
DATA backslashes<>+0(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslashes<>+8(SB)/8, $0x5c5c5c5c5c5c5c5c
GLOBL backslashes<>(SB), RODATA|NOPTR, $16
DATA spaces<>+0(SB)/8, $0x2020202020202020
DATA spaces<>+8(SB)/8, $0x2020202020202020
GLOBL spaces<>(SB), RODATA|NOPTR, $16

// MASK16 sets the low 16 bits of dst for the special bytes of the 16 bytes
// at off(SI): equal to '"' (X1) or '\\' (X2), or below 0x20 as a signed
// byte (X3), which takes in every byte above 0x7f.
#define MASK16(off, dst) \
	MOVOU off(SI), X0 \
	MOVO  X0, X4 \
	PCMPEQB X1, X4 \
	MOVO  X0, X5 \
	PCMPEQB X2, X5 \
	MOVO  X3, X6 \
	PCMPGTB X0, X6 \
	POR   X5, X4 \
	POR   X6, X4 \
	PMOVMSKB X4, dst

// func blockMask(p *[64]byte) uint64
TEXT ·blockMask(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVOU quotes<>(SB), X1
	MOVOU backslashes<>(SB), X2
	MOVOU spaces<>(SB), X3
	MASK16(0, AX)
	MASK16(16, BX)
	MASK16(32, CX)
	MASK16(48, DX)
	SHLQ $16, BX
	SHLQ $32, CX
	SHLQ $48, DX
	ORQ BX, AX
	ORQ DX, CX
	ORQ CX, AX
	MOVQ AX, ret+8(FP)
	RET
