// ---------------------------------------------------------------- burn-in soak over time (written into report.js's
// closure before its start, only on a page with a soak panel: report_html.JS_SOAK; it reuses that file's helpers)
const SOAK_METRICS=[["tflops","TFLOP/s","throughput"],["power_w","W","power draw"],["temperature_c","°C","temperature"],
 ["sm_clock_mhz","MHz","SM clock"]];
const SIBLING={color:"#aab1bc",width:1.1};
// one metric of a node's GPUs against time (linear axis, seconds since the soak started): siblings thin grey, the
// warned/failed GPUs thick in their status colour, the windows where one had a hardware/thermal slowdown shaded
function timeChart(g,key,unit,title){
 const W=330,H=200,L=50,R=10,T=22,B=36;let tmax=0,ymax=0;
 const floor=key==="tflops"?(g.find(x=>x.hi&&x.floor!=null)||{}).floor:null;if(floor!=null)ymax=floor;
 for(const x of g){for(const t of x.t)if(t>tmax)tmax=t;for(const v of x[key])if(v!=null&&v>ymax)ymax=v;}
 // the time axis ends at the last window (ticks up to it), the value axis at a round figure above the highest
 const xt=niceTicks(tmax||1,6).filter(t=>t<=tmax),yt=niceTicks(ymax||1,4);const X1=tmax||1,Y1=yt[yt.length-1]||1;
 const X=(t)=>L+(W-L-R)*t/X1,Y=(v)=>H-B-(H-T-B)*v/Y1;
 const s=sv("svg",{width:W,height:H,viewBox:"0 0 "+W+" "+H,role:"img"});s.appendChild(sv("rect",{x:0,y:0,width:W,height:H,fill:"#fff"}));
 s.appendChild(sv("text",{x:L,y:13,"font-weight":"600"},title+" ("+unit+")"));
 for(const x of g)if(x.hi)for(const [i] of x.ev){const a=i>0?(x.t[i-1]+x.t[i])/2:0,b=i+1<x.t.length?(x.t[i]+x.t[i+1])/2:x.t[i];
  s.appendChild(sv("rect",{x:X(a),y:T,width:Math.max(1,X(b)-X(a)),height:H-T-B,fill:"#f6b9b3",opacity:"0.55"}));}
 for(const v of yt){s.appendChild(sv("line",{x1:L,x2:W-R,y1:Y(v),y2:Y(v),stroke:"#eceef1"}));s.appendChild(sv("text",{x:L-5,y:Y(v)+4,"text-anchor":"end"},num(v)));}
 for(const t of xt){s.appendChild(sv("line",{x1:X(t),x2:X(t),y1:H-B,y2:H-B+4,stroke:"#444"}));s.appendChild(sv("text",{x:X(t),y:H-B+15,"text-anchor":"middle"},num(t)));}
 s.appendChild(sv("line",{x1:L,x2:W-R,y1:H-B,y2:H-B,stroke:"#444"}));s.appendChild(sv("line",{x1:L,x2:L,y1:T,y2:H-B,stroke:"#444"}));
 s.appendChild(sv("text",{x:(L+W-R)/2,y:H-5,"text-anchor":"middle"},"time (s, linear axis)"));
 if(floor!=null){s.appendChild(sv("line",Object.assign({x1:L,x2:W-R,y1:Y(floor),y2:Y(floor)},EXPECT)));
  s.appendChild(sv("text",{x:W-R-4,y:Y(floor)-4,"text-anchor":"end",fill:EXPECT.stroke},"expected min "+num(floor)));}
 let k=0;
 for(const x of [...g.filter(x=>!x.hi),...g.filter(x=>x.hi)]){const pts=[];x[key].forEach((v,i)=>{if(v!=null)pts.push(X(x.t[i]).toFixed(1)+","+Y(v).toFixed(1));});
  const st=x.hi?curveStyle(k++,x.st):null;
  const line=sv("polyline",Object.assign({points:pts.join(" "),fill:"none"},x.hi?{stroke:st.color,"stroke-width":2.6}:{stroke:SIBLING.color,"stroke-width":SIBLING.width}));
  line.appendChild(sv("title",{},"GPU "+x.gpu+" ("+ST[x.st]+")"));s.appendChild(line);}
 return s;
}
function gpuList(g){return g.map(x=>x.gpu).join(", ");}
function soakPanel(p){
 const hi=p.gpus.filter(x=>x.hi),sib=p.gpus.filter(x=>!x.hi);
 const box=el("div",{cls:"card soak"},el("div",{cls:"soakhead"},badge(ST[p.st])," ",hostLink(p.host),
  " GPU "+p.flagged.join(", ")+" beside its "+pl(sib.length,"sibling GPU")+" of the node"));
 for(const i of p.bad){const r=D.recs[i];box.appendChild(el("div",{cls:"soakwhy"},badge(ST[r[4]])," "+recLabel(r)+": "+(S(r[5])||"-")));}
 const grid=el("div",{cls:"soakgrid"});for(const [key,unit,title] of SOAK_METRICS)grid.appendChild(timeChart(p.gpus,key,unit,title));box.appendChild(grid);
 let k=0;const legend=hi.map(x=>{const st=curveStyle(k++,x.st);return {color:st.color,width:2.6,name:"GPU "+x.gpu+" ("+ST[x.st]+")"};});
 if(sib.length)legend.push({color:SIBLING.color,width:SIBLING.width,name:"siblings: GPU "+gpuList(sib)});
 if(hi.some(x=>x.floor!=null))legend.push({color:EXPECT.stroke,dash:EXPECT["stroke-dasharray"],width:1.5,name:"expected min TFLOP/s"});
 const ev=[...new Set(hi.flatMap(x=>x.ev.map(e=>e[1])))];
 if(ev.length)legend.push({fill:"#f6b9b3",opacity:0.55,name:ev.join(", ")+" active (GPU "+gpuList(hi.filter(x=>x.ev.length))+")"});
 box.appendChild(legendBox(legend));return box;
}
function renderSoak(){const box=$("soak");if(!box||!D.soak)return;box.textContent="";for(const p of D.soak)box.appendChild(soakPanel(p));}
new MutationObserver((m,obs)=>{if(document.body.getAttribute("data-ready")==="1"){obs.disconnect();renderSoak();}}).observe(document.body,
{attributes:true,attributeFilter:["data-ready"]});
