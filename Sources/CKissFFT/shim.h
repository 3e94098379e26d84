// CKissFFT: KissFFT's real-input FFT (Debian's libkissfft-dev, float build), for the convolver and the analyser.
#ifndef AUDIOGRAPH_CKISSFFT_SHIM_H
#define AUDIOGRAPH_CKISSFFT_SHIM_H
#include <kissfft/kiss_fftr.h>
#endif
