//go:build amd64 && !purego

#include "textflag.h"

// Sixteen copies of each byte the scanner compares with.
#define BYTES16(name, b8) \
	DATA name<>+0(SB)/8, $b8 \
	DATA name<>+8(SB)/8, $b8 \
	GLOBL name<>(SB), RODATA|NOPTR, $16

BYTES16(quotes, 0x2222222222222222)
BYTES16(backslashes, 0x5c5c5c5c5c5c5c5c)
BYTES16(spaces, 0x2020202020202020)
BYTES16(lettersB, 0x6262626262626262)
BYTES16(lettersF, 0x6666666666666666)
BYTES16(lettersN, 0x6e6e6e6e6e6e6e6e)
BYTES16(lettersR, 0x7272727272727272)
BYTES16(lettersT, 0x7474747474747474)

// CLASS16 classifies the 16 bytes at off(SI) into 16-bit masks: equal to
// '"' (X1) in q, equal to '\\' (X2) in b, equal to one of b f n r t
// (X7-X11) in l, and below 0x20 as a signed byte (X3), which takes in
// every byte above 0x7f, in o.
#define CLASS16(off, q, b, l, o) \
	MOVOU off(SI), X0 \
	MOVO  X0, X4 \
	PCMPEQB X1, X4 \
	MOVO  X0, X5 \
	PCMPEQB X2, X5 \
	MOVO  X3, X6 \
	PCMPGTB X0, X6 \
	MOVO  X0, X12 \
	PCMPEQB X7, X12 \
	MOVO  X0, X13 \
	PCMPEQB X8, X13 \
	POR   X13, X12 \
	MOVO  X0, X13 \
	PCMPEQB X9, X13 \
	POR   X13, X12 \
	MOVO  X0, X13 \
	PCMPEQB X10, X13 \
	POR   X13, X12 \
	MOVO  X0, X13 \
	PCMPEQB X11, X13 \
	POR   X13, X12 \
	PMOVMSKB X4, q \
	PMOVMSKB X5, b \
	PMOVMSKB X12, l \
	PMOVMSKB X6, o

// CLASS32 is CLASS16 for the 32 bytes at off(SI) with AVX2, constants in
// Y1-Y3 and Y7-Y11.
#define CLASS32(off, q, b, l, o) \
	VMOVDQU off(SI), Y0 \
	VPCMPEQB Y1, Y0, Y4 \
	VPCMPEQB Y2, Y0, Y5 \
	VPCMPGTB Y0, Y3, Y6 \
	VPCMPEQB Y7, Y0, Y12 \
	VPCMPEQB Y8, Y0, Y13 \
	VPOR Y13, Y12, Y12 \
	VPCMPEQB Y9, Y0, Y13 \
	VPOR Y13, Y12, Y12 \
	VPCMPEQB Y10, Y0, Y13 \
	VPOR Y13, Y12, Y12 \
	VPCMPEQB Y11, Y0, Y13 \
	VPOR Y13, Y12, Y12 \
	VPMOVMSKB Y4, q \
	VPMOVMSKB Y5, b \
	VPMOVMSKB Y12, l \
	VPMOVMSKB Y6, o

// MERGE ORs the 16-bit masks of one chunk, shifted into place, into the
// results in R8-R11.
#define MERGE(shift, q, b, l, o) \
	SHLQ $shift, q \
	SHLQ $shift, b \
	SHLQ $shift, l \
	SHLQ $shift, o \
	ORQ q, R8 \
	ORQ b, R9 \
	ORQ l, R10 \
	ORQ o, R11

// func blockMasksSSE2(p *[64]byte) (quote, backslash, letter, other uint64)
TEXT ·blockMasksSSE2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVOU quotes<>(SB), X1
	MOVOU backslashes<>(SB), X2
	MOVOU spaces<>(SB), X3
	MOVOU lettersB<>(SB), X7
	MOVOU lettersF<>(SB), X8
	MOVOU lettersN<>(SB), X9
	MOVOU lettersR<>(SB), X10
	MOVOU lettersT<>(SB), X11
	CLASS16(0, R8, R9, R10, R11)
	CLASS16(16, AX, BX, CX, DX)
	MERGE(16, AX, BX, CX, DX)
	CLASS16(32, AX, BX, CX, DX)
	MERGE(32, AX, BX, CX, DX)
	CLASS16(48, AX, BX, CX, DX)
	MERGE(48, AX, BX, CX, DX)
	MOVQ R8, quote+8(FP)
	MOVQ R9, backslash+16(FP)
	MOVQ R10, letter+24(FP)
	MOVQ R11, other+32(FP)
	RET

// func blockMasksAVX2(p *[64]byte) (quote, backslash, letter, other uint64)
TEXT ·blockMasksAVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	VBROADCASTI128 quotes<>(SB), Y1
	VBROADCASTI128 backslashes<>(SB), Y2
	VBROADCASTI128 spaces<>(SB), Y3
	VBROADCASTI128 lettersB<>(SB), Y7
	VBROADCASTI128 lettersF<>(SB), Y8
	VBROADCASTI128 lettersN<>(SB), Y9
	VBROADCASTI128 lettersR<>(SB), Y10
	VBROADCASTI128 lettersT<>(SB), Y11
	CLASS32(0, R8, R9, R10, R11)
	CLASS32(32, AX, BX, CX, DX)
	VZEROUPPER
	SHLQ $32, AX
	SHLQ $32, BX
	SHLQ $32, CX
	SHLQ $32, DX
	ORQ AX, R8
	ORQ BX, R9
	ORQ CX, R10
	ORQ DX, R11
	MOVQ R8, quote+8(FP)
	MOVQ R9, backslash+16(FP)
	MOVQ R10, letter+24(FP)
	MOVQ R11, other+32(FP)
	RET

// func prefetchLines(p *byte, n int)
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
prefetchloop:
	CMPQ CX, $0
	JLE prefetchdone
	PREFETCHT0 (AX)
	ADDQ $64, AX
	SUBQ $64, CX
	JMP prefetchloop
prefetchdone:
	RET
