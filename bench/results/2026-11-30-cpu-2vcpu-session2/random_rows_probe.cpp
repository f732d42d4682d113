// Random-row read probe (bag sums of 32 random rows of a 10M-row table, THP, 2 OpenMP threads):
// prefetch hint (t0 = prefetcht0 ... nta) and distance, all variants interleaved, median of 7.
// g++ -O3 -march=native -fopenmp random_rows_probe.cpp -o probe && OMP_NUM_THREADS=2 OMP_PROC_BIND=true ./probe 512
#include <sys/mman.h>
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include <random>
#include <algorithm>
template<int H> inline void pfb(const char* q, int bytes){ for(int l=0;l<bytes;l+=64) __builtin_prefetch(q+l,0,H); }
template<int H>
double run(const float* w, size_t RB, const std::vector<std::vector<int64_t>>& idx, int pf, float* out){
  size_t n=65536; auto t0=std::chrono::steady_clock::now();
  for(auto& v: idx){ const int64_t* ix=v.data();
    #pragma omp parallel for schedule(static)
    for(int bag=0;bag<2048;++bag){ float acc[128]={0};
      for(int k=0;k<32;++k){ size_t p=bag*32+k; if(p+pf<n) pfb<H>((const char*)w+ix[p+pf]*RB, RB);
        const float* r=(const float*)((const char*)w+ix[p]*RB); int D=RB/4; for(int d=0;d<D;++d) acc[d]+=r[d]; }
      memcpy(&out[bag*128],acc,512);} }
  double s=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count();
  return idx.size()*n/s/1e6;
}
int main(int argc,char**argv){
  size_t R=10000000; size_t RB=atoi(argv[1]);
  size_t bytes=R*RB; size_t al=2<<20; size_t alloc=(bytes+al-1)/al*al;
  float* w=(float*)aligned_alloc(al,alloc); madvise(w,alloc,MADV_HUGEPAGE);
  #pragma omp parallel for
  for(size_t i=0;i<alloc/4;++i) w[i]=float(i%97);
  std::vector<std::vector<int64_t>> idx(16,std::vector<int64_t>(65536)); std::mt19937_64 g(1); for(auto&v:idx) for(auto&x:v) x=g()%R;
  std::vector<float> out(2048*128);
  struct V{const char* name; int h; int pf;}; std::vector<V> vs={{"t0 pf16",3,16},{"t1 pf16",2,16},{"t2 pf16",1,16},{"nta pf16",0,16},{"t1 pf8",2,8},{"t1 pf32",2,32},{"t1 pf64",2,64},{"t0 pf32",3,32}};
  std::vector<std::vector<double>> res(vs.size());
  for(int rep=0;rep<7;++rep) for(size_t k=0;k<vs.size();++k){ size_t j=(k+rep)%vs.size(); auto&v=vs[j]; double r=
    v.h==3?run<3>(w,RB,idx,v.pf,out.data()):v.h==2?run<2>(w,RB,idx,v.pf,out.data()):v.h==1?run<1>(w,RB,idx,v.pf,out.data()):run<0>(w,RB,idx,v.pf,out.data()); res[j].push_back(r);}
  for(size_t k=0;k<vs.size();++k){ auto r=res[k]; std::sort(r.begin(),r.end()); printf("RB %zu %-9s median %.1f Mrows/s (min %.1f max %.1f)\n",RB,vs[k].name,r[3],r[0],r[6]); }
}
